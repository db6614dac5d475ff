"""What a chaos run left behind, read from the database, the MCP server's request log and the load.

Definitions (what the report counts):
- a lost decision: a question an approver was told was decided (200) whose recorded decision differs,
  or a decided question whose answer never reached the server although its call was not interrupted
  (an interrupted call's last request has an unknown outcome: such decisions are counted apart), or one
  that reached it changed;
- a double resume: the server received two requests carrying the answers of one round of one agent
  request (`rid`);
- a duplicate call: the server received two first requests for one `rid`, or the database holds two
  calls for it;
- a hung agent: an agent whose last wait had not ended when the run's time (load and drain) was up;
- kill-to-take-over: for each dispatch job the killed process held (claimed or being sent, read once its
  database connections are gone), from the SIGKILL to the audit event another process wrote when it took
  the job over: `request_sent` (a claimed job sent by its new claimer) or `call_interrupted` (a job whose
  send had started: its outcome is unknown), as timestamped in the database; and from the end of the
  lease the dead process had renewed it to, to the same event (what the other processes took).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from benchmarks.chaos.load import TERMINAL, Load
from console.audit.models import AuditEvent
from console.calls.models import Call, CallRound, DispatchJob, Elicitation
from console.identity.models import User

ENDED = ("completed", "awaiting_input", "interrupted")  # where every call must be once the run is over
DECIDED = {"accept": "accepted", "decline": "declined"}
TAKE_OVER = ("request_sent", "call_interrupted")
GONE_WITHIN = 30.0  # seconds for a killed process's connections to go (PostgreSQL checks every second)


@dataclass(frozen=True)
class HeldJob:
    job_id: str
    call_id: str
    status: str  # claimed or sending
    lease_until: datetime | None  # what its dead claimer had renewed its lease to


@dataclass(frozen=True)
class Kill:
    role: str
    pid: int
    at: float  # wall clock of the SIGKILL
    held: tuple[HeldJob, ...]
    ready_at: float  # wall clock when the process started again was ready (listening, or working)


def longest_outage(kills: Sequence[Kill], processes: int) -> float:
    """The longest stretch in which every one of the `processes` console processes was down (killed, and
    not ready again yet): no dispatcher could take anything over then."""
    events = sorted([(k.at, 1) for k in kills] + [(k.ready_at, -1) for k in kills])
    down, since, longest = 0, 0.0, 0.0
    for moment, step in events:
        down += step
        if step == 1 and down == processes:
            since = moment
        elif step == -1 and down == processes - 1:
            longest = max(longest, moment - since)
    return longest


@dataclass
class Report:
    seconds: float
    kills: list[Kill]
    load: Load
    calls: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)  # interrupted calls, by their reason
    # Interrupted calls whose request was out from a process that lived on: its lease ran out first.
    interrupted_alive: int = 0
    decided: int = 0  # questions decided in the database
    unknown_decisions: int = 0  # decided, in a call interrupted before the server was known to get them
    lost_decisions: list[str] = field(default_factory=list)
    double_resumes: list[str] = field(default_factory=list)
    duplicate_calls: list[str] = field(default_factory=list)
    hung_agents: list[str] = field(default_factory=list)
    odd_calls: list[str] = field(default_factory=list)  # not ended as they must be, or not as their agent saw
    takeovers: list[float] = field(default_factory=list)  # seconds, one per job held by a killed process
    after_lease: list[float] = field(default_factory=list)  # of each take-over, the seconds after the lease
    not_taken_over: list[str] = field(default_factory=list)
    audit_ok: bool = False
    audit_lines: list[str] = field(default_factory=list)

    def broken(self) -> list[str]:
        """The invariants this run broke, each with its first examples."""
        found = {
            "lost decisions": self.lost_decisions,
            "double resumes": self.double_resumes,
            "duplicate calls": self.duplicate_calls,
            "hung agents": self.hung_agents,
            "calls not ended as they must be": self.odd_calls,
            "jobs of killed processes never taken over": self.not_taken_over,
            "answers no agent or approver should get": self.load.refused,
        }
        broken = [f"{what}: {len(items)}, e.g. {items[:3]}" for what, items in found.items() if items]
        if not self.audit_ok:
            broken.append(f"audit verify failed: {self.audit_lines[-3:]}")
        if not self.load.requests:
            broken.append("no agent request was made")
        return broken


async def held_jobs(
    factory: async_sessionmaker[AsyncSession], pid: int, connection_name: str
) -> tuple[HeldJob, ...]:
    """The dispatch jobs the killed process `pid` held (a dispatcher's id starts with its pid), read once
    its connections are gone (a commit it sent before it died may still be landing until then)."""
    with anyio.move_on_after(GONE_WITHIN):
        while await _connected(factory, connection_name):  # noqa: ASYNC110  # PostgreSQL has no event for it
            await anyio.sleep(0.05)
    async with factory() as session:
        rows = await session.execute(
            select(DispatchJob.id, DispatchJob.call_id, DispatchJob.status, DispatchJob.lease_until).where(
                DispatchJob.claimed_by.like(f"{pid}-%"), DispatchJob.status.in_(("claimed", "sending"))
            )
        )
        return tuple(HeldJob(*row) for row in rows)


async def _connected(factory: async_sessionmaker[AsyncSession], name: str) -> bool:
    async with factory() as session:
        query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
        return bool((await session.execute(query, {"name": name})).scalar_one())


def read_requests(log: Path) -> list[dict[str, Any]]:
    """Every tools/call the MCP server received, as it logged them."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


async def check(
    report: Report, factory: async_sessionmaker[AsyncSession], requests: list[dict[str, Any]]
) -> None:
    """Fill `report` from the database and the server's requests (the load and kills are in it)."""
    async with factory() as session:
        calls = (await session.execute(select(Call.id, Call.status, Call.params_json, Call.error_json))).all()
        questions = (
            await session.execute(
                select(Elicitation.id, Elicitation.call_id, Elicitation.status, Elicitation.content_json)
                .add_columns(User.name, CallRound.n)
                .outerjoin(User, User.id == Elicitation.decided_by)
                .join(CallRound, CallRound.id == Elicitation.round_id)
            )
        ).all()
        await _take_overs(report, session)
        senders = (
            await session.execute(select(DispatchJob.claimed_by).where(DispatchJob.status == "interrupted"))
        ).scalars()
        killed = {str(kill.pid) for kill in report.kills}
        report.interrupted_alive = sum(1 for s in senders if (s or "").partition("-")[0] not in killed)
    rid_of = {c.id: json.loads(c.params_json)["arguments"]["rid"] for c in calls}
    status_of = {c.id: c.status for c in calls}
    report.calls = len(calls)
    _statuses(report, calls)
    _duplicates(report, rid_of, requests)
    _decisions(report, questions, rid_of, status_of, requests)
    _agents(report, status_of)


def _statuses(report: Report, calls: Sequence[Any]) -> None:
    for call in calls:
        report.statuses[call.status] += 1
        reason = json.loads(call.error_json or "{}").get("message")
        if call.status == "interrupted":
            report.reasons[reason or "(none)"] += 1
        if call.status not in ENDED or (call.status == "interrupted" and not reason):
            report.odd_calls.append(f"{call.id} {call.status} {reason}")


def _duplicates(report: Report, rid_of: dict[str, str], requests: list[dict[str, Any]]) -> None:
    firsts = Counter(r["rid"] for r in requests if r["round"] == 0)
    report.duplicate_calls += [
        f"{rid}: the server got {n} first requests" for rid, n in firsts.items() if n > 1
    ]
    rows = Counter(rid_of.values())
    report.duplicate_calls += [f"{rid}: {n} calls in the database" for rid, n in rows.items() if n > 1]
    resumes = Counter((r["rid"], r["round"]) for r in requests if r["round"] > 0)
    report.double_resumes += [f"{rid} round {n}: {k} resumes" for (rid, n), k in resumes.items() if k > 1]


def _decisions(
    report: Report,
    questions: Sequence[Any],
    rid_of: dict[str, str],
    status_of: dict[str, str],
    requests: list[dict[str, Any]],
) -> None:
    received: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for r in requests:
        received[(r["rid"], r["round"])].append(r["response"])
    by_id = {q.id: q for q in questions}
    for answer in report.load.answers:
        q = by_id[answer.question_id]
        content = json.loads(q.content_json) if q.content_json else None
        if (q.status, q.name) != (DECIDED[answer.action], answer.approver) or content != answer.content:
            report.lost_decisions.append(
                f"{q.id}: {answer.approver} was told {answer.action}, recorded {q.status}"
            )
    for q in questions:
        if q.status == "pending":
            continue
        report.decided += 1
        sent = _sent(q.status, json.loads(q.content_json) if q.content_json else None)
        got = [
            {k: v for k, v in (r or {}).items() if k in ("action", "content")}
            for r in received[(rid_of[q.call_id], q.n)]
        ]
        if sent in got:
            continue
        if got:
            report.lost_decisions.append(f"{q.id}: decided {sent}, the server got {got}")
        elif status_of[q.call_id] == "interrupted":
            report.unknown_decisions += 1
        else:
            report.lost_decisions.append(f"{q.id}: decided {sent}, never reached the server")


def _sent(status: str, content: Any) -> dict[str, Any]:
    """The answer the console sends for a decided question
    (console.calls.questions.decisions.response_for)."""
    if status == "accepted":
        return {"action": "accept", "content": content}
    return {"action": {"declined": "decline", "expired": "cancel"}.get(status, "cancel")}


def _agents(report: Report, status_of: dict[str, str]) -> None:
    load = report.load
    report.hung_agents += sorted(load.started - load.finished)
    report.hung_agents += [f"{r.rid} gave up" for r in load.requests if r.gave_up]
    for r in load.requests:
        if r.call_id is None:
            continue
        if r.status in TERMINAL and status_of.get(r.call_id) != r.status:
            report.odd_calls.append(
                f"{r.rid}: its agent saw {r.status}, the database says {status_of.get(r.call_id)}"
            )


async def _take_overs(report: Report, session: AsyncSession) -> None:
    for kill in report.kills:
        since = datetime.fromtimestamp(kill.at, UTC)
        for job in kill.held:
            events = await session.execute(
                select(AuditEvent.at, AuditEvent.payload_json)
                .where(
                    AuditEvent.call_id == job.call_id,
                    AuditEvent.at >= since,
                    AuditEvent.action.in_(TAKE_OVER),
                )
                .order_by(AuditEvent.seq)
            )
            taken = next((at for at, payload in events if json.loads(payload).get("job") == job.job_id), None)
            if taken is None:
                report.not_taken_over.append(f"{kill.role} pid {kill.pid}: job {job.job_id} ({job.status})")
            else:
                report.takeovers.append((taken - since).total_seconds())
                if job.lease_until is not None:
                    report.after_lease.append((taken - job.lease_until).total_seconds())
