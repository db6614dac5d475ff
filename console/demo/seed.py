"""Seeding the demo: team `platform`, users `dev` and `lead`, the deployer, and one deploy waiting."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call
from console.calls.service import create_run, start_call
from console.config import Settings
from console.identity import authenticate_token, create_team, create_token, create_user
from console.identity.models import Membership, Team, User
from console.identity.passwords import hash_password
from console.mcp.models import McpServer
from console.mcp.registry import add_server

TEAM = "platform"
USERS = (("dev", "member"), ("lead", "approver"))


@dataclass(frozen=True)
class Seeded:
    passwords: dict[str, str]
    dev_token: str
    call_id: str

    def describe(self, url: str) -> Iterator[str]:
        yield ""
        yield f"Approval console demo on {url}"
        for name, password in self.passwords.items():
            yield f"  user {name:<5} password {password}"
        yield f"  API token for dev's agent: {self.dev_token}"
        yield f"  a deploy of auth-service waits for an answer: {url}/api/v1/calls/{self.call_id}"
        yield f"  try: curl -s -H 'Authorization: Bearer {self.dev_token}' {url}/api/v1/elicitations"
        yield "Press Ctrl+C to stop."


async def seed_demo(*, session: AsyncSession, settings: Settings) -> Seeded:
    """Create (or reuse) the demo team, users and server; fresh passwords and token each run."""
    team = (await session.execute(select(Team).where(Team.name == TEAM))).scalar_one_or_none()
    if team is None:
        team = await create_team(session=session, name=TEAM)
    passwords = {name: secrets.token_urlsafe(9) for name, _ in USERS}
    for name, role in USERS:
        await _ensure_user(session, team, name, role, passwords[name])
    await _ensure_deployer(session, team)
    token = await create_token(session=session, user_name="dev", team_name=TEAM, name="demo agent")
    call_id = await _ensure_waiting_deploy(session, token, settings)
    return Seeded(passwords, token, call_id)


async def _ensure_user(session: AsyncSession, team: Team, name: str, role: str, password: str) -> None:
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    member = (
        user
        and (
            await session.execute(
                select(Membership).where(Membership.user_id == user.id, Membership.team_id == team.id)
            )
        ).scalar_one_or_none()
    )
    if user is None or member is None:
        await create_user(session=session, name=name, team_name=TEAM, role=role, password=password)
        return
    user.password_hash = hash_password(password)
    await session.commit()


async def _ensure_deployer(session: AsyncSession, team: Team) -> None:
    existing = (
        await session.execute(
            select(McpServer).where(McpServer.team_id == team.id, McpServer.name == "deployer")
        )
    ).scalar_one_or_none()
    if existing is None:
        await add_server(
            session=session,
            team_id=team.id,
            name="deployer",
            command=f"{sys.executable} -m console.demo.deployer",
            env={"DEPLOY_STATE_KEY": secrets.token_urlsafe(32)},
        )


async def _ensure_waiting_deploy(session: AsyncSession, token: str, settings: Settings) -> str:
    principal = await authenticate_token(session=session, token=token)
    waiting = (
        await session.execute(
            select(Call).where(Call.status.in_(("running", "resuming", "awaiting_input"))).limit(1)
        )
    ).scalar_one_or_none()
    if waiting is not None:
        return waiting.id
    run = await create_run(
        session=session, principal=principal, team=TEAM, title="Release auth-service", agent="demo-agent"
    )
    body = json.dumps(
        {
            "server": "deployer",
            "method": "tools/call",
            "params": {"name": "deploy", "arguments": {"service": "auth-service"}},
        }
    )
    call = await start_call(
        session=session, principal=principal, settings=settings, pool=None, run_id=run.id, body_text=body
    )
    return call.id
