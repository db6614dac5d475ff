"""Throwaway databases (SQLite file or a fresh PostgreSQL database), migrated and seeded."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psycopg
from sqlalchemy.engine import make_url

from console.db import create_engine, postgres_conninfo, session_factory
from console.identity import create_team, create_token, create_user
from console.identity.credentials import CredentialCipher
from console.mcp.admin import ServerSettings, create_server
from console.mcp.sealed import Outbound
from console.migrate import upgrade
from console.transactions import transaction

TEAM = "bench"
AGENT = "agent"
PASSWORD = "agent-password-1"  # noqa: S105  # a throwaway account in a throwaway database


@asynccontextmanager
async def database(kind: str, work: Path, postgres_url: str) -> AsyncIterator[str]:
    """A fresh, migrated database URL of `kind` ("sqlite" or "postgres"), dropped afterwards."""
    if kind == "sqlite":
        path = work / f"bench-{secrets.token_hex(4)}.db"
        url = f"sqlite+aiosqlite:///{path}"
        await anyio.to_thread.run_sync(upgrade, url)
        yield url
        return
    admin = postgres_conninfo(postgres_url)
    name = f"console_bench_{secrets.token_hex(4)}"
    await anyio.to_thread.run_sync(_admin, admin, f'CREATE DATABASE "{name}"')
    target = make_url(postgres_url).set(drivername="postgresql+psycopg", database=name)
    rendered = target.render_as_string(hide_password=False)
    try:
        await anyio.to_thread.run_sync(upgrade, rendered)
        yield rendered
    finally:
        await anyio.to_thread.run_sync(_admin, admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin(dsn: str, sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(sql.encode())


async def seed(database_url: str, servers: dict[str, str]) -> str:
    """The team, its agent (a member with a password) and the MCP servers by name -> URL; the agent's
    API token (the agent owns its runs and may answer their questions)."""
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            await create_team(session=session, name=TEAM)
            await create_user(session=session, name=AGENT, team_name=TEAM, role="member", password=PASSWORD)
            token = (await create_token(session=session, user_name=AGENT, team_name=TEAM)).token
            for name, url in servers.items():
                await create_server(
                    session=session,
                    by=None,
                    team_name=TEAM,
                    name=name,
                    settings=ServerSettings(transport="http", url=url, internal=True),  # on this machine
                    outbound=Outbound(CredentialCipher(None)),
                )
            return token
    finally:
        await engine.dispose()
