"""The chaos run's team: its MCP server, agents (members) and approvers, each with an API token."""

from __future__ import annotations

from benchmarks.chaos.load import SERVER, TEAM
from console.db import create_engine, session_factory
from console.identity import create_team, create_token, create_user
from console.identity.credentials import CredentialCipher
from console.mcp.admin import ServerSettings, create_server
from console.mcp.sealed import Outbound
from console.transactions import transaction


def agent_names(count: int) -> list[str]:
    return [f"agent-{n:02d}" for n in range(1, count + 1)]


def approver_names(count: int) -> list[str]:
    return [f"approver-{n}" for n in range(1, count + 1)]


async def seed(database_url: str, server_url: str, agents: list[str], approvers: list[str]) -> dict[str, str]:
    """Register the server (internal: it runs on this machine) and everyone; each one's token by name."""
    engine = create_engine(database_url)
    tokens: dict[str, str] = {}
    try:
        async with transaction(session_factory(engine)) as session:
            await create_team(session=session, name=TEAM)
            await create_server(
                session=session,
                by=None,
                team_name=TEAM,
                name=SERVER,
                settings=ServerSettings(transport="http", url=server_url, internal=True),
                outbound=Outbound(CredentialCipher(None)),
            )
            people = [(name, "member") for name in agents] + [(name, "approver") for name in approvers]
            for name, role in people:
                await create_user(session=session, name=name, team_name=TEAM, role=role)
                tokens[name] = (await create_token(session=session, user_name=name, team_name=TEAM)).token
    finally:
        await engine.dispose()
    return tokens
