"""Setting a team's policy rules and adding people for policy tests (through the console's own services)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM
from console.db import create_engine, session_factory
from console.identity import create_token, create_user, team_by_name
from console.mcp.models import McpServer
from console.policies.service import save_rule
from console.transactions import transaction
from tests.harness import TEAM, Console


async def set_policy(
    console: Console,
    scope: str = "team",
    *,
    server: str | None = None,
    tool: str | None = None,
    condition: str | None = None,
    **values: Any,
) -> None:
    """Create or replace one rule of the platform team's policy (only for calls meeting `condition`)."""
    await _save(console.runtime.factory, scope, server, tool, condition, values)


async def set_policy_at(
    database_url: str,
    scope: str = "team",
    *,
    server: str | None = None,
    tool: str | None = None,
    condition: str | None = None,
    **values: Any,
) -> None:
    """The same, in the database of a console running as its own process."""
    engine = create_engine(database_url)
    try:
        await _save(session_factory(engine), scope, server, tool, condition, values)
    finally:
        await engine.dispose()


async def _save(
    factory: async_sessionmaker[AsyncSession],
    scope: str,
    server: str | None,
    tool: str | None,
    condition: str | None,
    values: dict[str, Any],
) -> None:
    async with transaction(factory) as session:
        team = await team_by_name(session=session, name=TEAM)
        server_id = None
        if server is not None:
            query = select(McpServer.id).where(McpServer.team_id == team.id, McpServer.name == server)
            server_id = (await session.execute(query)).scalar_one()
        await save_rule(
            session=session,
            actor=SYSTEM,
            team_id=team.id,
            scope=scope,
            server_id=server_id,
            tool_pattern=tool,
            condition=condition,
            values=values,
        )


async def add_person(console: Console, name: str, role: str) -> None:
    """Another person in the platform team with an API token; signs in with `<name>-pw-1` like the others."""
    async with transaction(console.runtime.factory) as session:
        await create_user(session=session, name=name, team_name=TEAM, role=role, password=f"{name}-pw-1")
        console.tokens[name] = (await create_token(session=session, user_name=name, team_name=TEAM)).token


async def set_server_trust(console: Console, server: str, trusted: bool) -> None:
    async with transaction(console.runtime.factory) as session:
        found = (await session.execute(select(McpServer).where(McpServer.name == server))).scalar_one()
        found.trusted = trusted
        await session.commit()
