"""Seeding the demo: team `platform` and its people, the deployer with its deploy policy, the tracker, Team
notes behind OAuth, and waiting calls."""

from __future__ import annotations

import json
import secrets
import string
import sys
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, replace

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM
from console.calls.models import Call, Elicitation
from console.calls.service import create_run
from console.calls.states import TERMINAL, CallStatus, QuestionStatus
from console.config import Settings, secret_text
from console.demo.tracker import Tracker
from console.dispatch.follow import start_call
from console.dispatch.signals import Signals
from console.errors import Unauthorized
from console.identity import authenticate_token, create_team, create_token, create_user
from console.identity.credentials import CredentialCipher, forget_server_credentials, save_credential
from console.identity.models import Membership, ServerCredential, Team, User
from console.identity.passwords import hash_password
from console.identity.tokens import list_tokens, revoke_token
from console.mcp.admin import ServerSettings, create_server, edit_server, settings_of
from console.mcp.models import McpServer
from console.mcp.pool import ConnectionPool
from console.mcp.sealed import Outbound
from console.policies.service import save_rule
from console.transactions import commit

TEAM = "platform"
JWKS_VARIABLE = "DEPLOY_REQUIRE_APPROVAL_JWKS"
ISSUER_VARIABLE = "DEPLOY_APPROVAL_ISSUER"
# dev's agent makes the calls; lead and ops approve; admin runs the team (and the whole console).
USERS = (("dev", "member"), ("lead", "approver"), ("ops", "approver"), ("admin", "admin"))
SITE_ADMINS = ("admin",)
MAIL_DOMAIN = "demo.invalid"
# The demo's production deploy policy: two approvers, not the requester, signed in within 5 minutes.
DEPLOY_POLICY = {"required_approvals": 2, "no_self_approval": True, "step_up_minutes": 5}
# A deploy that names production waits at an approval gate under that policy, before the deployer hears
# of it; the approvers may change its arguments. The deployer checks the console's signed approval. A
# deploy that names no environment is no gate's: the deployer asks where, and that question is asked
# under the same policy. Conditions fail closed, so the rule says that a missing environment is fine.
PRODUCTION_GATE = {"gate": True, "allow_edit": True}
PRODUCTION = 'environment != null and environment == "production"'
RELEASE: dict[str, object] = {"name": "deploy", "arguments": {"service": "auth-service"}}
GATED_RELEASE: dict[str, object] = {
    "name": "deploy",
    "arguments": {"service": "billing", "environment": "production"},
}
DEMO_AGENT_LABEL = "demo agent"  # the name of dev's API token, kept across runs
# How long the banner waits for the demo's deploy to reach its question (a fresh stdio server starts).
QUESTION_WAIT_SECONDS = 30.0
WHOAMI: dict[str, object] = {"name": "whoami", "arguments": {}}


@dataclass(frozen=True)
class Seeded:
    passwords: dict[str, str]
    dev_token: str
    call_id: str
    gated_call_id: str
    tracker_call_id: str | None
    notes_call_id: str | None = None
    notes_connected: bool = False  # dev connected Team notes in an earlier run: no call waits for it

    def describe(
        self,
        url: str,
        deploy_page: str,
        gate_page: str,
        notes_page: str | None = None,
        *,
        mailbox: bool = False,
    ) -> Iterator[str]:
        """The banner; `deploy_page`, `gate_page` and `notes_page` are the paths of the deploys' questions
        and of the notes call's connect question (see `question_page`)."""
        yield ""
        yield f"Approval console demo on {url}"
        for name, password in self.passwords.items():
            yield f"  user {name:<5} password {password}"
        yield f"  API token for dev's agent: {self.dev_token}"
        yield f"  agents connect to the MCP gateway at {url}/mcp, e.g. with this mcpServers entry:"
        for line in json.dumps(mcp_servers_entry(url, self.dev_token), indent=2).splitlines():
            yield f"    {line}"
        yield f"  a deploy of auth-service waits for an answer: {url}{deploy_page}"
        yield "  its policy: two approvers (lead and ops), not the requester, signed in within 5 minutes"
        yield f"  a production deploy of billing waits at its approval gate (same policy): {url}{gate_page}"
        yield "  the deployer deploys to production only with the console's signed approval"
        if self.tracker_call_id:
            yield (
                "  dev's agent wants to create a tracker issue: sign in as dev to connect the account "
                "(the tracker asks for dev's password too)"
            )
        if notes_page is not None:
            yield (
                "  Team notes is behind OAuth: dev's agent asks it who dev is and waits for dev to connect "
                "(sign in as dev and press Connect; you sign in there with any name): "
                f"{url}{notes_page}"
            )
        if self.notes_connected:
            yield (
                "  Team notes is behind OAuth: dev connected it in an earlier run, so dev's agent reaches it "
                "(console demo --reset starts afresh)"
            )
        if mailbox:
            yield f"  the approvers were emailed: each user reads their mail at {url}/demo/mailbox"
        yield f"  try: curl -s -H 'Authorization: Bearer {self.dev_token}' {url}/api/v1/elicitations"
        yield "Press Ctrl+C to stop."


def mcp_servers_entry(url: str, token: str) -> dict[str, object]:
    """The `mcpServers` configuration an MCP client takes to reach the gateway as dev's agent."""
    server = {"type": "http", "url": f"{url}/mcp", "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcpServers": {"approval-console": server}}


def new_passwords() -> dict[str, str]:
    """A fresh password per user; none starts with '-', which a command line would take for an option."""
    alphanumeric = string.ascii_letters + string.digits
    return {name: secrets.choice(alphanumeric) + secrets.token_urlsafe(9) for name, _ in USERS}


async def seed_demo(
    *,
    session: AsyncSession,
    settings: Settings,
    passwords: dict[str, str],
    tracker: Tracker | None = None,
    notes_url: str | None = None,
    jwks_url: str | None = None,
    kept_token: str | None = None,
) -> Seeded:
    """Create (or reuse) the demo team, users and servers; fresh passwords each run. dev's agent keeps
    `kept_token` (the last run's) while it still stands for it, and otherwise gets a new one. With
    `jwks_url` (where this console publishes its keys) the deployer requires its signed approval for
    production."""
    team = (await session.execute(select(Team).where(Team.name == TEAM))).scalar_one_or_none()
    if team is None:
        team = await create_team(session=session, name=TEAM)
    for name, role in USERS:
        await _ensure_user(session, team, name, role, passwords[name])
    deployer = await _ensure_deployer(session, team, settings, jwks_url)
    for condition, values in ((None, DEPLOY_POLICY), (PRODUCTION, PRODUCTION_GATE)):
        await save_rule(
            session=session,
            actor=SYSTEM,
            team_id=team.id,
            scope="tool",
            server_id=deployer.id,
            tool_pattern="deploy",
            condition=condition,
            values=values,
        )
    token = await _demo_token(session, kept_token)
    await commit(session)  # the seeding is the entry point: what the calls below need is durable first
    call_id = await _ensure_waiting(session, token, settings, "deployer", RELEASE, "Release auth-service")
    # The gate shows the tool as the deployer lists it (description, annotations, the edit form from its
    # inputSchema), so this call is started with connections that may ask the deployer for its tools.
    async with ConnectionPool.of(settings) as pool:
        gated_call_id = await _ensure_waiting(
            session, token, settings, "deployer", GATED_RELEASE, "Release billing to production", pool=pool
        )
    tracker_call = None
    if tracker is not None:
        await _ensure_tracker(session, team, tracker, settings)
        tracker_call = await _ensure_waiting(
            session,
            token,
            settings,
            "tracker",
            {"name": "create_issue", "arguments": {"title": "Login is slow"}},
            "File the login bug",
        )
    notes_call = None
    notes_connected = False
    if notes_url is not None:
        notes = await _ensure_notes(session, team, notes_url, settings)
        waiting = await _waiting(session, "notes", WHOAMI)
        notes_connected = waiting is None and await _has_credential(session, "dev", notes)
        if not notes_connected:
            notes_call = waiting or await _ensure_waiting(
                session, token, settings, "notes", WHOAMI, "Ask Team notes who I am"
            )
    return Seeded(passwords, token, call_id, gated_call_id, tracker_call, notes_call, notes_connected)


async def _has_credential(session: AsyncSession, user: str, server: McpServer) -> bool:
    """Whether `user` holds a credential for `server` (Team notes: a connection from an earlier run)."""
    found = await session.execute(
        select(ServerCredential.user_id)
        .join(User, User.id == ServerCredential.user_id)
        .where(User.name == user, ServerCredential.server_id == server.id)
    )
    return found.first() is not None


async def _demo_token(session: AsyncSession, kept: str | None) -> str:
    """dev's one demo agent token: `kept` while it is still that, else a new one; any other is revoked."""
    keep_id = None
    if kept is not None:
        with suppress(Unauthorized):
            principal = await authenticate_token(session=session, token=kept)
            if (principal.user_name, principal.team_name) == ("dev", TEAM):
                keep_id = principal.token_id
    kept_standing = False
    for earlier in await list_tokens(session=session, user_name="dev"):
        if (earlier.team, earlier.name, earlier.revoked_at) != (TEAM, DEMO_AGENT_LABEL, None):
            continue
        if earlier.id == keep_id:
            kept_standing = True
        else:
            await revoke_token(session=session, actor=SYSTEM, token_id=earlier.id)
    if kept is not None and kept_standing:
        return kept
    created = await create_token(session=session, user_name="dev", team_name=TEAM, name=DEMO_AGENT_LABEL)
    return created.token


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
        user = await create_user(session=session, name=name, team_name=TEAM, role=role, password=password)
    else:
        user.password_hash = hash_password(password)
    user.site_admin = name in SITE_ADMINS
    user.email = user.email or demo_address(name)
    await commit(session)


def demo_address(name: str) -> str:
    """Where the demo's notifications to `name` go: the demo's own mailbox takes every address."""
    return f"{name}@{MAIL_DOMAIN}"


async def _ensure_deployer(
    session: AsyncSession, team: Team, settings: Settings, jwks_url: str | None
) -> McpServer:
    existing = (
        await session.execute(
            select(McpServer).where(McpServer.team_id == team.id, McpServer.name == "deployer")
        )
    ).scalar_one_or_none()
    # The deployer checks the attestations name this console (its base URL) as their issuer.
    approvals: dict[str, str | None] = (
        {JWKS_VARIABLE: jwks_url, ISSUER_VARIABLE: settings.base_url} if jwks_url else {}
    )
    if existing is not None:
        if approvals:  # this run's address; the stored state key stays (None keeps a value)
            kept = settings_of(existing)
            updated = replace(kept, env={**kept.env, **approvals})
            await edit_server(
                session=session,
                by=None,
                team_name=team.name,
                name="deployer",
                settings=updated,
                outbound=Outbound.of(settings),
            )
        return existing
    deployer = ServerSettings(
        transport="stdio",
        command=f"{sys.executable} -m console.demo.deployer",
        env={"DEPLOY_STATE_KEY": secrets.token_urlsafe(32), **approvals},
    )
    return await create_server(
        session=session,
        by=None,
        team_name=team.name,
        name="deployer",
        settings=deployer,
        outbound=Outbound.of(settings),
    )


async def _ensure_tracker(session: AsyncSession, team: Team, tracker: Tracker, settings: Settings) -> None:
    server = (
        await session.execute(
            select(McpServer).where(McpServer.team_id == team.id, McpServer.name == "tracker")
        )
    ).scalar_one_or_none()
    if server is None:
        # The demo's tracker runs beside the console, on loopback: internal.
        tracker_server = ServerSettings(
            transport="http", url=tracker.mcp_url, credential_name="Authorization", internal=True
        )
        server = await create_server(
            session=session,
            by=None,
            team_name=team.name,
            name="tracker",
            settings=tracker_server,
            outbound=Outbound.of(settings),
        )
    else:
        server.url, server.internal = tracker.mcp_url, True  # another port when the last one was taken
    cipher = CredentialCipher(secret_text(settings))
    for name, tracker_token in tracker.tokens.items():
        user = (await session.execute(select(User).where(User.name == name))).scalar_one()
        await save_credential(
            session=session,
            cipher=cipher,
            actor=SYSTEM,
            user_id=user.id,
            server_id=server.id,
            secret=tracker_token,
        )
    await commit(session)


async def _ensure_notes(session: AsyncSession, team: Team, url: str, settings: Settings) -> McpServer:
    """Team notes, behind OAuth: each person connects their own account there. It runs beside the console
    on loopback (internal), on the last run's port when that is free, and keeps what it issued, so the
    connections made to it stay; on another port they are forgotten."""
    query = select(McpServer).where(McpServer.team_id == team.id, McpServer.name == "notes")
    server = (await session.execute(query)).scalar_one_or_none()
    if server is None:
        created = await create_server(
            session=session,
            by=None,
            team_name=team.name,
            name="notes",
            settings=ServerSettings(transport="http", url=url, oauth=True, internal=True),
            outbound=Outbound.of(settings),
        )
        await commit(session)
        return created
    if server.url != url:  # another notes server: the connections to the last one are gone with it
        await forget_server_credentials(session=session, server_id=server.id)
    server.url, server.internal, server.credential_mode = url, True, "oauth"
    await commit(session)
    return server


async def _waiting(session: AsyncSession, server: str, params: dict[str, object]) -> str | None:
    """An earlier run's call to `server` with `params` that still waits, if any."""
    waiting = (
        (
            await session.execute(
                select(Call)
                .join(McpServer, McpServer.id == Call.server_id)
                .where(
                    Call.status.in_((CallStatus.RUNNING, CallStatus.RESUMING, CallStatus.AWAITING_INPUT)),
                    McpServer.name == server,
                )
            )
        )
        .scalars()
        .all()
    )
    same = [call for call in waiting if json.loads(call.params_json) == params]
    return same[0].id if same else None


async def _ensure_waiting(
    session: AsyncSession,
    token: str,
    settings: Settings,
    server: str,
    params: dict[str, object],
    title: str,
    *,
    pool: ConnectionPool | None = None,
) -> str:
    waiting = await _waiting(session, server, params)
    if waiting is not None:
        return waiting
    principal = await authenticate_token(session=session, token=token)
    run = await create_run(session=session, principal=principal, team=TEAM, title=title, agent="demo-agent")
    body = json.dumps({"server": server, "method": "tools/call", "params": params})
    started = await start_call(
        session=session,
        principal=principal,
        settings=settings,
        pool=pool,
        run_id=run.id,
        body_text=body,
        tools_within=QUESTION_WAIT_SECONDS,
    )
    return started.call.id


async def question_page(factory: async_sessionmaker[AsyncSession], signals: Signals, call_id: str) -> str:
    """The path of the call's pending question once the dispatcher has asked it (bounded wait), or of
    its run when the question is not there in time or the call ended without one."""
    with anyio.move_on_after(QUESTION_WAIT_SECONDS):
        while True:
            marker = signals.call_marker(call_id)  # before reading: a change meanwhile still wakes us
            async with factory() as session:
                question = (
                    await session.execute(
                        select(Elicitation.id).where(
                            Elicitation.call_id == call_id, Elicitation.status == QuestionStatus.PENDING
                        )
                    )
                ).scalar()
                ended = await session.scalar(
                    select(Call.id).where(Call.id == call_id, Call.status.in_(TERMINAL))
                )
            if question is not None:
                return f"/elicitations/{question}"
            if ended is not None:
                break
            await signals.wait_for_call(call_id, 1.0, since=marker)
    async with factory() as session:
        call = await session.get(Call, call_id)
    return f"/runs/{call.run_id}" if call is not None else "/"
