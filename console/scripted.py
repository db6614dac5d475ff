"""A console on a throwaway SQLite database, driven by a script instead of people: one team, one member
who owns every run and answers every question, and one server. Calls go through the same services as
the API and the same dispatcher and pool; `answer_round` decides each round's answers.

Used by the conformance client (`console.conformance`) and by `console call` / `console test`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console import migrate
from console.calls.endpoints import endpoint_for_owner
from console.calls.models import CallRound, Elicitation
from console.calls.questions.connected import connects_waiting
from console.calls.questions.decisions import answer
from console.calls.service import create_run, view_call
from console.calls.states import CallStatus, QuestionStatus
from console.config import Settings
from console.db import create_engine, session_factory
from console.dispatch.follow import start_call
from console.dispatch.signals import Signals
from console.dispatch.taking import accept_connects
from console.dispatch.worker import Dispatcher
from console.identity import Principal, authenticate_token, create_team, create_token, create_user
from console.identity.sso_assertions import keep_assertion
from console.mcp.admin import ServerSettings, create_server
from console.mcp.admin_roots import set_roots
from console.mcp.challenge import Challenge
from console.mcp.pool import ConnectionPool
from console.mcp.registry import server_by_name
from console.mcp.roots import Root
from console.mcp.sealed import Outbound
from console.oauth.clients import ClientSite
from console.oauth.flow import Returned, begin, finish
from console.transactions import after_commit, transaction

TEAM = "scripted"
MEMBER = "script"
WAIT = "wait"


@dataclass(frozen=True)
class Answer:
    action: str  # accept | decline | cancel, or wait: leave the question for the server to answer itself
    content: Any = None


@dataclass(frozen=True)
class Round:
    """One round of a call that waits: what the server asked, and its questions for people in the
    server's key order."""

    n: int
    input_requests: dict[str, Any]
    questions: list[Elicitation]
    # An older server pushed it (MCP 2025-11-25): it may answer its own link (elicitation/complete).
    held: bool = False


AnswerRound = Callable[[Round], Awaitable[dict[str, Answer] | None]]
"""Answers by question id; None stops: the call is left waiting."""

Browse = Callable[[str], Awaitable[Returned]]
"""The member's browser at an authorization server: given the authorization URL, what the browser came back
to the console's callback with."""


@dataclass(frozen=True)
class Outcome:
    status: str  # the call's: completed, failed, abandoned ... or awaiting_input when stopped
    result: dict[str, Any] | None
    error: dict[str, Any] | None


class ScriptedConsole:
    def __init__(
        self, factory: async_sessionmaker[AsyncSession], settings: Settings, pool: ConnectionPool
    ) -> None:
        self.factory = factory
        self._settings = settings
        self._pool = pool
        self.signals = Signals()
        self.server = ""
        self._principal: Principal | None = None

    async def seed(self, server: str, settings: ServerSettings, roots: tuple[Root, ...] = ()) -> None:
        """The team, its member and the one server (internal: it may run on this machine)."""
        async with transaction(self.factory) as session:
            await create_team(session=session, name=TEAM)
            await create_user(session=session, name=MEMBER, team_name=TEAM, role="member")
            token = (await create_token(session=session, user_name=MEMBER, team_name=TEAM)).token
            await create_server(
                session=session,
                by=None,
                team_name=TEAM,
                name=server,
                settings=settings,
                outbound=Outbound.of(self._settings),
            )
            if roots:
                await set_roots(
                    session=session, by=None, team_name=TEAM, server_name=server, roots=list(roots)
                )
            self._principal = await authenticate_token(session=session, token=token)
        self.server = server

    async def signed_in_through_sso(self, id_token: str, expires_at: datetime) -> None:
        """The member signed in through the console's identity provider, which gave `id_token`: the
        console keeps it for enterprise-managed authorization."""
        sso = Outbound.of(self._settings).sso
        assert sso is not None, "single sign-on settings first"  # noqa: S101  # a programming error
        async with transaction(self.factory) as session:
            await keep_assertion(
                session=session,
                cipher=Outbound.of(self._settings).cipher,
                user_id=self.principal.user_id,
                issuer=sso.issuer,
                id_token=id_token,
                expires_at=expires_at,
            )

    @property
    def principal(self) -> Principal:
        assert self._principal is not None, "seed() first"  # noqa: S101  # a programming error
        return self._principal

    async def listed_tools(self) -> list[dict[str, Any]]:
        """The server's tools, over the connection its calls take."""
        async with transaction(self.factory) as session:
            server = await server_by_name(session=session, team_id=self.principal.team_id, name=self.server)
            endpoint = await endpoint_for_owner(
                session=session,
                outbound=Outbound.of(self._settings),
                server=server,
                owner_id=self.principal.user_id,
                owner_name=self.principal.user_name,
            )
        return await self._pool.list_tools(endpoint)

    async def connect(self, challenge: Challenge | None, browse: Browse) -> None:
        """The member connects their account at the server's authorization server, as from a connect
        question's page, `browse` playing their browser; the connect questions their calls wait on are
        accepted.

        Raises:
            OAuthRefused: discovery, registration, the answer or the code exchange was refused.
        """
        outbound = Outbound.of(self._settings)
        async with transaction(self.factory) as session:
            server = await server_by_name(session=session, team_id=self.principal.team_id, name=self.server)
            authorization = await begin(
                session=session,
                outbound=outbound,
                site=ClientSite.of(self._settings),
                server=server,
                user_id=self.principal.user_id,
                challenge=challenge,
            )
        returned = await browse(authorization.url)
        async with transaction(self.factory) as session:
            connected = await finish(
                session=session,
                outbound=outbound,
                site=ClientSite.of(self._settings),
                user_id=self.principal.user_id,
                browser_key=authorization.browser_key,
                returned=returned,
            )
            waiting = await connects_waiting(
                session=session, viewer=self.principal.viewer, server_id=connected.server_id
            )
        # As the console's callback does: the calls waiting for this connection go on.
        await accept_connects(
            factory=self.factory,
            signals=self.signals,
            dispatcher=None,
            viewer=self.principal.viewer,
            question_ids=waiting,
        )

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        answer_round: AnswerRound,
        *,
        check_listed: bool = True,
    ) -> Outcome:
        """Start a tools/call as the API would, answer each round with `answer_round`, and return how it
        ended (or where it stopped).

        Raises:
            ConsoleError: the call could not be started (no such tool, bad arguments) or an answer was
                refused (content that does not fit the form).
        """
        body = json.dumps(
            {"server": self.server, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
        async with transaction(self.factory) as session:
            run = await create_run(
                session=session, principal=self.principal, team=TEAM, title=tool, agent="scripted"
            )
            started = await start_call(
                session=session,
                principal=self.principal,
                settings=self._settings,
                pool=self._pool if check_listed else None,
                run_id=run.id,
                body_text=body,
            )
        self.signals.work_available()
        return await self._settle(started.call.id, answer_round)

    async def _settle(self, call_id: str, answer_round: AnswerRound) -> Outcome:
        asked: set[str] = set()  # questions already given to answer_round (some left to the server)
        while True:
            marker = self.signals.call_marker(call_id)
            async with transaction(self.factory) as session:
                call = (await view_call(session=session, viewer=self.principal.viewer, call_id=call_id)).call
            if call.status == CallStatus.AWAITING_INPUT:
                waiting = await self._round(call_id, call.round)
                waiting = replace(waiting, questions=[q for q in waiting.questions if q.id not in asked])
                answers = await answer_round(waiting) if waiting.questions else {}
                if answers is None:
                    return Outcome(call.status, None, None)
                asked.update(q.id for q in waiting.questions)
                await self._answer(answers)
            elif call.status not in (CallStatus.RUNNING, CallStatus.RESUMING):
                result = json.loads(call.result_json) if call.result_json else None
                error = json.loads(call.error_json) if call.error_json else None
                return Outcome(call.status, result, error)
            await self.signals.wait_for_call(call_id, 0.2, since=marker)

    async def _round(self, call_id: str, n: int) -> Round:
        async with transaction(self.factory) as session:
            round_ = (
                await session.execute(select(CallRound).where(CallRound.call_id == call_id, CallRound.n == n))
            ).scalar_one()
            pending = (
                await session.execute(
                    select(Elicitation).where(
                        Elicitation.round_id == round_.id, Elicitation.status == QuestionStatus.PENDING
                    )
                )
            ).scalars()
            requests = json.loads(round_.input_requests_json or "{}")
        order = {key: i for i, key in enumerate(requests)}
        questions = sorted(pending, key=lambda q: order.get(q.key, len(order)))
        return Round(n, requests, questions, held=round_.held)

    async def _answer(self, answers: dict[str, Answer]) -> None:
        for elicitation_id, given in answers.items():
            if given.action == WAIT:
                continue
            async with transaction(self.factory) as session:
                decision = await answer(
                    session=session,
                    viewer=self.principal.viewer,
                    elicitation_id=elicitation_id,
                    action=given.action,
                    content=given.content,
                )
                if decision.resume_queued:
                    after_commit(session, self.signals.work_available)


@asynccontextmanager
async def scripted_console(**settings: Any) -> AsyncIterator[ScriptedConsole]:
    """A `ScriptedConsole` on a fresh SQLite database in a temporary folder, its dispatcher running;
    `settings` override the console's settings (a `secret_key` seals the server's header and environment
    values). Nothing of it outlives the block."""
    with tempfile.TemporaryDirectory(prefix="console-scripted-") as folder:
        database_url = f"sqlite+aiosqlite:///{Path(folder) / 'console.db'}"
        migrate.upgrade(database_url)
        config = Settings(
            database_url=database_url,
            dispatch_poll_seconds=0.2,
            **{"request_timeout_seconds": 15, **settings},
        )
        engine = create_engine(database_url)
        try:
            async with ConnectionPool.of(config) as pool:
                console = ScriptedConsole(session_factory(engine), config, pool)
                # Nothing here checks approvals: sends go unsigned.
                dispatcher = Dispatcher(
                    factory=console.factory,
                    pool=pool,
                    settings=config,
                    signals=console.signals,
                    attester=None,
                )
                async with anyio.create_task_group() as tg:
                    tg.start_soon(dispatcher.run)
                    yield console
                    tg.cancel_scope.cancel()
        finally:
            await engine.dispose()
