"""Holding an older server's request open while people answer what it pushed (MCP 2025-11-25 servers ask
with `elicitation/create`, `sampling/createMessage` or `roots/list` in the middle of a call).

The push becomes a held round of the call, with its question in the inbox like any other. While it waits,
the dispatcher that sent the request renews the job's lease; if that process dies, the lease runs out and
the call is interrupted (the server has lost the request), never sent again by itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.background import is_database_error, wait_after
from console.calls.models import AgentRequest, Call, CallRound, DispatchJob, Elicitation, Run
from console.calls.moves import move_round
from console.calls.questions.decisions import response_for
from console.calls.replies.outcomes import PUSHED_KEY, close_held, complete_link, record_pushed
from console.calls.server_reports.reports import Reports
from console.calls.service import is_terminal
from console.calls.states import JobStatus, QuestionMode, QuestionStatus, RoundStatus
from console.config import Settings
from console.db import get_row, utcnow
from console.dispatch.signals import Signals
from console.mcp.endpoint import PushedRefused
from console.transactions import transaction

WITHDRAWN = "the server stopped waiting for the answer"


@dataclass
class HeldRequest:
    """The `on_pushed` of one sent request (console/mcp/endpoint.py `PushedAsk`)."""

    factory: async_sessionmaker[AsyncSession]
    settings: Settings
    signals: Signals
    worker_id: str
    job_id: str
    call_id: str
    server: str
    reports: Reports  # the request's progress and logs: kept when the call stops to wait, and while it does
    # Links the server said are done; the notice may arrive before the question it ends is recorded.
    done_links: set[str] = field(default_factory=set)

    async def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        with anyio.CancelScope(shield=True):
            async with transaction(self.factory) as session:
                round_id = await self._open(session, method, params)
            if params.get("elicitationId") in self.done_links:
                await self.link_completed(str(params["elicitationId"]))
        self.signals.call_changed(self.call_id)
        try:
            return await self._answer(round_id)
        except anyio.get_cancelled_exc_class():
            # The server withdrew its request, or the connection ended: nobody may answer it now.
            with anyio.CancelScope(shield=True):
                async with transaction(self.factory) as session:
                    await close_held(session=session, call_id=self.call_id, reason=WITHDRAWN)
                self.signals.call_changed(self.call_id)
            raise

    async def link_completed(self, elicitation_id: str) -> None:
        """The server says the flow behind a link it pushed is done: a link question still pending is
        closed as accepted by the console, and the request held for it goes on."""
        self.done_links.add(elicitation_id)
        with anyio.CancelScope(shield=True):
            async with transaction(self.factory) as session:
                closed = await complete_link(
                    session=session, call_id=self.call_id, elicitation_id=elicitation_id
                )
        if closed:
            self.signals.work_available()
            self.signals.call_changed(self.call_id)

    async def _open(self, session: AsyncSession, method: str, params: dict[str, Any]) -> str:
        job, call, run = await self._locked(session)
        if is_terminal(status := call.status):
            raise PushedRefused(f"the call was {status}")  # the transaction rolls back
        round_ = await record_pushed(
            session=session,
            call=call,
            run=run,
            job=job,
            method=method,
            params=params,
            settings=self.settings,
            server=self.server,
        )
        job.lease_until = utcnow() + timedelta(seconds=self.settings.lease_seconds)
        self.reports.keep(call)
        return round_.id

    async def _answer(self, round_id: str) -> dict[str, Any]:
        """Wait for the round's answers (renewing the lease); the pushed request's answer."""
        renew_after = self.settings.lease_seconds / 3
        renewed = anyio.current_time()
        failures = 0
        while True:
            marker = self.signals.work_marker()
            renew = anyio.current_time() - renewed >= renew_after
            try:
                with anyio.CancelScope(shield=True):
                    async with transaction(self.factory) as session:
                        ready, answer = await self._answered(session, round_id, renew=renew)
            except Exception as error:
                if not is_database_error(error):
                    raise
                # The server keeps holding its request; the answer is looked for again once the
                # database is back (a lease that runs out meanwhile interrupts the call, truthfully).
                failures += 1
                await anyio.sleep(wait_after(failures))
                continue
            failures = 0
            if ready:
                if answer is None:
                    raise PushedRefused("nobody answered")
                self.signals.call_changed(self.call_id)
                return answer
            if renew:
                renewed = anyio.current_time()
            await self.signals.wait_for_work(self.settings.dispatch_poll_seconds, since=marker)

    async def _answered(
        self, session: AsyncSession, round_id: str, *, renew: bool
    ) -> tuple[bool, dict[str, Any] | None]:
        """Whether the round was answered, and the answer (None: nobody answered), marking it so."""
        job, call, _ = await self._locked(session)
        round_ = await get_row(session, CallRound, round_id)
        if is_terminal(status := call.status):
            raise PushedRefused(f"the call was {status}")  # the transaction rolls back
        if round_.status != RoundStatus.READY:
            self.reports.keep(call)  # what the server reported while it waits
            if renew:
                job.lease_until = utcnow() + timedelta(seconds=self.settings.lease_seconds)
            return False, None
        answer = await _answer_of(session, round_)
        move_round(round_, RoundStatus.ANSWERED)
        # The request is out again until the server answers it; the sender's heartbeat renews the lease.
        job.lease_until = utcnow() + timedelta(seconds=self.settings.lease_seconds)
        return True, answer

    async def _locked(self, session: AsyncSession) -> tuple[DispatchJob, Call, Run]:
        found = await session.execute(
            select(DispatchJob, Call, Run)
            .join(Call, Call.id == DispatchJob.call_id)
            .join(Run, Run.id == Call.run_id)
            .where(DispatchJob.id == self.job_id)
            .with_for_update(of=[DispatchJob, Call])
            .execution_options(populate_existing=True)
        )
        job, call, run = found.one()
        if job.status != JobStatus.SENDING or job.claimed_by != self.worker_id:
            raise PushedRefused("the console no longer holds this request")
        return job, call, run


async def _answer_of(session: AsyncSession, round_: CallRound) -> dict[str, Any] | None:
    """What goes back for the round's one pushed request: a person's answer (a sampling reply only if they
    wrote one), or what the agent answered; None when nobody did."""
    question = (
        await session.execute(select(Elicitation).where(Elicitation.round_id == round_.id))
    ).scalar_one_or_none()
    if question is not None:
        if question.mode == QuestionMode.SAMPLING and question.status != QuestionStatus.ACCEPTED:
            raise PushedRefused(f"the sampling request was {question.status} by the people asked")
        return response_for(question)
    ask = (
        await session.execute(
            select(AgentRequest).where(AgentRequest.round_id == round_.id, AgentRequest.key == PUSHED_KEY)
        )
    ).scalar_one_or_none()
    if ask is None or ask.response_json is None:
        return None
    answer: dict[str, Any] = json.loads(ask.response_json)
    return answer
