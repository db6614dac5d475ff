"""A run's history as people read it: each call, its rounds, who answered what, and how it ended."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_refusal
from console.calls.models import Call, CallRound, Elicitation, Run
from console.calls.questions.inbox import SignatureView, signatures_of
from console.calls.service import may_see_run
from console.errors import NotFound
from console.identity import Viewer
from console.identity.models import Team, User
from console.identity.viewer import OUTSIDER
from console.mcp.models import McpServer


@dataclass(frozen=True)
class AnsweredQuestion:
    elicitation: Elicitation
    decided_by: str | None
    # With N-of-M approval: who gave the answer first, then each co-signer (or who declined), oldest first.
    signatures: tuple[SignatureView, ...] = ()


@dataclass(frozen=True)
class RoundEntry:
    round: CallRound
    questions: list[AnsweredQuestion]

    @property
    def error(self) -> dict[str, Any] | None:
        return json.loads(self.round.error_json) if self.round.error_json else None


@dataclass(frozen=True)
class CallEntry:
    call: Call
    server: str
    rounds: list[RoundEntry]

    @property
    def params(self) -> Any:
        return json.loads(self.call.params_json)

    @property
    def result(self) -> Any:
        return json.loads(self.call.result_json) if self.call.result_json else None

    @property
    def error(self) -> Any:
        return json.loads(self.call.error_json) if self.call.error_json else None

    @property
    def target(self) -> str:
        params = self.params
        return str(params.get("uri") if self.call.method == "resources/read" else params.get("name"))


@dataclass(frozen=True)
class Timeline:
    run: Run
    owner: str
    team: str
    calls: list[CallEntry]


async def run_timeline(*, session: AsyncSession, viewer: Viewer, run_id: str) -> Timeline:
    """Raises: NotFound when the run does not exist or the viewer may not see it (then recorded as
    `access_refused`)."""
    row = (
        await session.execute(
            select(Run, User.name, Team.name)
            .join(User, User.id == Run.owner_id)
            .join(Team, Team.id == Run.team_id)
            .where(Run.id == run_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"no run {run_id!r}")
    run, owner, team = row
    if not may_see_run(viewer, run):
        reason = OUTSIDER if viewer.role_in(run.team_id) is None else "a member sees only their own runs"
        raise record_refusal(
            session=session,
            error=NotFound(f"no run {run_id!r}"),
            actor=viewer.actor,
            subject_type="run",
            subject_id=run.id,
            attempt="view",
            reason=reason,
        )
    calls = (
        await session.execute(
            select(Call, McpServer.name)
            .join(McpServer, McpServer.id == Call.server_id)
            .where(Call.run_id == run.id)
            .order_by(Call.created_at)
            .execution_options(populate_existing=True)
        )
    ).all()
    call_ids = [c.id for c, _ in calls]
    rounds = (
        (
            await session.execute(
                select(CallRound).where(CallRound.call_id.in_(call_ids)).order_by(CallRound.n)
            )
        )
        .scalars()
        .all()
    )
    decider = select(User.name).where(User.id == Elicitation.decided_by).scalar_subquery()
    questions = (
        await session.execute(
            select(Elicitation, decider)
            .where(Elicitation.call_id.in_(call_ids))
            .order_by(Elicitation.created_at, Elicitation.key)
        )
    ).all()
    signatures = await signatures_of(session=session, questions=[e for e, _ in questions])
    by_round: dict[str, list[AnsweredQuestion]] = {}
    for elicitation, who in questions:
        answered = AnsweredQuestion(elicitation, who, signatures.get(elicitation.id, ()))
        by_round.setdefault(elicitation.round_id, []).append(answered)
    entries = [
        CallEntry(
            call, server, [RoundEntry(r, by_round.get(r.id, [])) for r in rounds if r.call_id == call.id]
        )
        for call, server in calls
    ]
    return Timeline(run, owner, team, entries)
