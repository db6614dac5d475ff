"""What the server answered, applied to the call: complete, another round, a restart, or a failure."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Select, Update, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, digest, fingerprint, record_event, redact_input_requests
from console.calls.declared import policy_of_call, relayed_of
from console.calls.links.required import (
    LINK_KEY_PREFIX,
    MAX_LINK_ROUNDS,
    may_require_links,
    open_required_links,
    required_links,
)
from console.calls.models import AgentRequest, Call, CallRound, DispatchJob, Elicitation, Run
from console.calls.moves import (
    move_agent_request,
    move_call,
    move_job,
    move_question,
    move_round,
    round_may_become,
)
from console.calls.notices import announce, call_ended
from console.calls.questions.decisions import queue_resume_if_complete
from console.calls.rounds.abandon import close_pending
from console.calls.rounds.asking import keep_policy, request_digest, shown_digest
from console.calls.rounds.input_requests import Question, parse_input_requests
from console.calls.states import (
    AgentRequestStatus,
    CallStatus,
    JobKind,
    JobStatus,
    QuestionMode,
    QuestionStatus,
    RoundStatus,
)
from console.calls.tasks import cancel_task_of
from console.config import Settings
from console.db import utcnow
from console.errors import McpError, McpProtocolError
from console.mcp.endpoint import ROOTS, SAMPLING, Complete, InputRequired, PushedRefused
from console.mcp.models import McpServer
from console.mcp.roots import Root, roots_result

# The key of what an older server pushed, in the one-request round that holds it.
PUSHED_KEY = "pushed"
# What a server that refuses a resume's request state says (-32602, data.reason), as the SDK's servers do.
INVALID_PARAMS = -32602
INVALID_REQUEST_STATE = "invalid_request_state"
STATE_ONLY_BACKOFF_START = 0.05
STATE_ONLY_BACKOFF_CAP = 2.0


class Opened(NamedTuple):
    """A round opened by a server's reply, and the questions it left waiting for people."""

    round: CallRound
    asked: list[Elicitation]


async def record_reply(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    reply: Complete | InputRequired,
    settings: Settings,
    server: str,
    roots: tuple[Root, ...] = (),
) -> list[Elicitation]:
    """Apply a server's reply to a sent request; the caller commits. `roots` answer the server's
    `roots/list` requests (those the request told it of). The questions the reply left waiting."""
    if job.round_id is not None:
        await session.execute(_ROUND_ANSWERED, {"round_id": job.round_id})
    if isinstance(reply, Complete):
        end_call(session, call, CallStatus.COMPLETED, result=reply.result)
        record_completion(session, call, job.kind, reply.result)
        return []
    try:
        opened = await open_round(
            session=session,
            call=call,
            run=run,
            job=job,
            reply=reply,
            settings=settings,
            server=server,
            roots=roots,
        )
    except McpProtocolError as exc:
        await record_error(session=session, call=call, job=job, error=exc)
        return []
    return [] if opened is None else opened.asked


async def record_pushed(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    method: str,
    params: dict[str, Any],
    settings: Settings,
    server: str,
) -> CallRound:
    """Open a held round for what an older server pushed while its request is out; the caller commits.

    Raises:
        PushedRefused: the call reached its round cap, or the request is malformed or too large.
    """
    # At the cap a round that asks abandons the call; a push is refused instead, and the server goes on.
    capped = PushedRefused(f"the call reached its round cap ({settings.round_cap} rounds)")
    if call.round >= settings.round_cap:
        raise capped
    reply = InputRequired(input_requests={PUSHED_KEY: {"method": method, "params": params}})
    try:
        opened = await open_round(
            session=session,
            call=call,
            run=run,
            job=job,
            reply=reply,
            settings=settings,
            server=server,
            roots=(),
            held=True,
        )
    except McpProtocolError as exc:
        raise PushedRefused(exc.message) from None
    if opened is None:  # only at the cap, checked above
        raise capped
    return opened.round


def held_open_rounds(call_id: Any) -> Select[str]:
    """The rounds of the call `call_id` (a value or a column) whose questions its server holds open."""
    return select(CallRound.id).where(
        CallRound.call_id == call_id, CallRound.held.is_(True), CallRound.status == RoundStatus.OPEN
    )


def round_answered(which: ColumnElement[bool]) -> Update:
    """The rounds `which` picks are answered, unless a restart superseded them meanwhile."""
    return (
        update(CallRound)
        .where(which, round_may_become(RoundStatus.ANSWERED))
        .values(status=RoundStatus.ANSWERED)
    )


# Built once: they run whenever a call that asked something ends.
_HELD_OPEN_ROUNDS = held_open_rounds(bindparam("call_id"))
_ROUND_ANSWERED = round_answered(CallRound.id == bindparam("round_id"))


async def close_held(*, session: AsyncSession, call_id: str, reason: str) -> None:
    """The server stopped waiting: what the call's held rounds still ask is closed as interrupted, and the
    audit log says why. The caller commits."""
    held_rounds = (await session.execute(_HELD_OPEN_ROUNDS, {"call_id": call_id})).scalars().all()
    if not held_rounds:  # most calls: one query
        return
    closed = await close_pending(
        session=session, rounds=held_rounds, status=QuestionStatus.INTERRUPTED, now=utcnow()
    )
    await session.execute(
        update(CallRound)
        .where(CallRound.id.in_(held_rounds), round_may_become(RoundStatus.SUPERSEDED))
        .values(status=RoundStatus.SUPERSEDED)
    )
    if closed:
        record_event(
            session=session,
            actor=SYSTEM,
            action="held_questions_closed",
            subject_type="call",
            subject_id=call_id,
            call_id=call_id,
            payload={"reason": reason, "closed": closed},
        )


async def complete_link(
    *, session: AsyncSession, call_id: str, elicitation_id: str, held: bool = True
) -> bool:
    """An older server's `notifications/elicitation/complete`: the call's pending link question with that
    `elicitationId` is accepted by the console (the flow it pointed to is done), among those of its held
    rounds, or with `held` False of its rounds of links the server required (-32042). Whether one was;
    the caller commits."""
    which = CallRound.held.is_(True) if held else Elicitation.key.startswith(LINK_KEY_PREFIX)
    pending = (
        await session.execute(
            select(Elicitation, CallRound)
            .join(CallRound, CallRound.id == Elicitation.round_id)
            .where(
                Elicitation.call_id == call_id,
                Elicitation.mode == QuestionMode.URL,
                Elicitation.status == QuestionStatus.PENDING,
                which,
            )
            .with_for_update(of=Elicitation)
        )
    ).all()
    for question, round_ in pending:
        asked = json.loads(round_.input_requests_json).get(question.key, {}).get("params", {})
        if asked.get("elicitationId") != elicitation_id:
            continue
        move_question(question, QuestionStatus.ACCEPTED)
        question.decided_at, question.decided_via = utcnow(), "server"
        record_event(
            session=session,
            actor=SYSTEM,
            action="link_completed",
            subject_type="elicitation",
            subject_id=question.id,
            call_id=call_id,
            payload={"key": question.key, "elicitation_id": elicitation_id},
        )
        await session.flush()
        await queue_resume_if_complete(session=session, round_=round_, actor=SYSTEM)
        return True
    return False


async def record_error(*, session: AsyncSession, call: Call, job: DispatchJob, error: McpError) -> None:
    """A JSON-RPC error or a protocol violation: restart once if the server refused a resume's request
    state, else fail with the server's error. Any other error to a resume may come after the server acted
    on it (an HTTP 500, a tool that ran and then failed), so nothing is sent again."""
    if job.round_id is not None:
        round_ = (await session.execute(select(CallRound).where(CallRound.id == job.round_id))).scalar_one()
        round_.error_json = json.dumps(error.as_json())
        if refuses_request_state(error) and await _may_restart(session, call, round_):
            move_round(round_, RoundStatus.SUPERSEDED)
            call.restarts += 1
            move_call(call, CallStatus.RESUMING)
            session.add(
                DispatchJob(
                    call_id=call.id, kind=JobKind.RESTART, status=JobStatus.READY, restart_of=round_.id
                )
            )
            record_event(
                session=session,
                actor=SYSTEM,
                action="state_rejected_restart",
                subject_type="call",
                subject_id=call.id,
                call_id=call.id,
                payload={"round": round_.n, "error": error.as_json(), "restarts": call.restarts},
            )
            return
    fail_call(session=session, call=call, job=job, error=error.as_json())


async def record_links_required(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    error: McpError,
    settings: Settings,
    server: str,
) -> list[Elicitation]:
    """The server answered -32042 (URLElicitationRequiredError): its links become questions for the run's
    owner and the request waits, parked, to go out again once they are done; a malformed error, or one
    still repeated after MAX_LINK_ROUNDS rounds of links, fails the call without passing its data on.
    The questions asked; the caller commits."""
    try:
        requests = required_links(error, settings)
    except McpProtocolError as exc:
        fail_call(session=session, call=call, job=job, error={"code": error.rpc_code, "message": exc.message})
        return []
    if not await may_require_links(session, call.id):
        message = (
            f"the server still required links (-32042) after {MAX_LINK_ROUNDS} rounds of them were done, "
            "so the call was not sent again"
        )
        fail_call(session=session, call=call, job=job, error={"code": error.rpc_code, "message": message})
        return []
    return await open_required_links(
        session=session, call=call, run=run, job=job, server=server, requests=requests, settings=settings
    )


def refuses_request_state(error: McpError) -> bool:
    """Whether the server refused the request state itself, with the error MCP servers answer for it
    (the SDK's): -32602 with data {"reason": "invalid_request_state"}. Only that error says the server
    did nothing with the resume."""
    data = error.data
    said = data.get("reason") if isinstance(data, dict) else None
    return error.rpc_code == INVALID_PARAMS and said == INVALID_REQUEST_STATE


def fail_call(*, session: AsyncSession, call: Call, job: DispatchJob, error: dict[str, Any]) -> None:
    """End the call as failed with `error` (a JSON-RPC-style error object) and say so in the audit log."""
    end_call(session, call, CallStatus.FAILED, error=error)
    record_event(
        session=session,
        actor=SYSTEM,
        action="call_failed",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={"error": error, "job": job.kind, "attempts": job.attempts},
    )


def record_lost(*, session: AsyncSession, call: Call, job: DispatchJob | None, reason: str) -> None:
    """The request went out but its outcome is unknown (or, with no job, the call's state is): a person
    decides whether to send it again."""
    payload: dict[str, object] = {"reason": reason}
    if job is not None:
        move_job(job, JobStatus.INTERRUPTED)
        payload = {"job": job.id, "kind": job.kind, **payload}
    end_call(session, call, CallStatus.INTERRUPTED, error={"message": reason})
    record_event(
        session=session,
        actor=SYSTEM,
        action="call_interrupted",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload=payload,
    )


async def _may_restart(session: AsyncSession, call: Call, round_: CallRound) -> bool:
    # Only a resume that carried requestState can be refused for its state, and only a round that a
    # person decided (not one re-applied after an earlier restart) earns a restart: one per decision.
    if round_.request_state_json is None:
        return False
    human = (
        await session.execute(
            select(func.count())
            .select_from(Elicitation)
            .where(Elicitation.round_id == round_.id, Elicitation.reapplied_from.is_(None))
        )
    ).scalar_one()
    return bool(human)


def record_completion(session: AsyncSession, call: Call, job_kind: str, result: Any) -> None:
    """The `call_completed` event of a call whose server answered its `job_kind` request with `result`,
    which the log knows by its digest (`result_digest`): the result itself is kept on the call only."""
    record_event(
        session=session,
        actor=SYSTEM,
        action="call_completed",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={"round": call.round, "job": job_kind, **result_digest(result)},
    )


def result_digest(result: Any) -> dict[str, Any]:
    """What an audit event says of a server's result: its SHA-256 and size (`audit.digest`)."""
    known = digest(result)
    return {"result_sha256": known["sha256"], "result_bytes": known["bytes"]}


def end_call(
    session: AsyncSession, call: Call, status: CallStatus, *, result: Any = None, error: Any = None
) -> None:
    move_call(call, status)
    call.result_json = json.dumps(result) if result is not None else None
    call.error_json = json.dumps(error) if error is not None else None
    call_ended(session, call)


async def open_round(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    reply: InputRequired,
    settings: Settings,
    server: str,
    roots: tuple[Root, ...],
    held: bool = False,
) -> Opened | None:
    if call.round >= settings.round_cap:
        end_call(
            session,
            call,
            CallStatus.ABANDONED,
            error={"message": f"gave up after {settings.round_cap} rounds (round cap)"},
        )
        record_event(
            session=session,
            actor=SYSTEM,
            action="round_cap_reached",
            subject_type="call",
            subject_id=call.id,
            call_id=call.id,
            payload={"rounds": call.round},
        )
        await cancel_task_of(session=session, call_id=call.id)
        return None
    requests_json = json.dumps(reply.input_requests, separators=(",", ":"))
    if len(requests_json.encode()) > settings.max_input_requests_bytes:
        raise McpProtocolError(f"inputRequests larger than {settings.max_input_requests_bytes} bytes")
    state_json = None if reply.request_state is None else json.dumps(reply.request_state)
    if reply.request_state is not None and len(reply.request_state.encode("utf-8", "surrogatepass")) > (
        settings.max_request_state_bytes
    ):
        raise McpProtocolError(f"requestState larger than {settings.max_request_state_bytes} bytes")
    # Configured roots answer a roots request even when the agent behind the gateway offers its own.
    answered_here = frozenset({ROOTS}) if roots else frozenset()
    relayed = relayed_of(call) | answered_here
    people_sample = call.people_sample and SAMPLING not in relayed
    questions, asks = parse_input_requests(reply.input_requests, relayed, people_sample=people_sample)
    round_ = CallRound(
        call_id=call.id,
        n=call.round + 1,
        input_requests_json=requests_json,
        request_state_json=state_json,
        status=RoundStatus.OPEN,
        held=held,
    )
    session.add(round_)
    await session.flush()  # before what refers to it
    call.round = round_.n  # after: the call's changes then go out in one UPDATE
    record_event(
        session=session,
        actor=SYSTEM,
        action="round_received",
        subject_type="round",
        subject_id=round_.id,
        call_id=call.id,
        payload={
            "round": round_.n,
            "input_requests": redact_input_requests(reply.input_requests),  # a link is its owner's alone
            "request_state": fingerprint(reply.request_state) if reply.request_state is not None else None,
            **({"held": True} if held else {}),
        },
    )
    call.updated_at = utcnow()
    if not questions and not asks:
        await _queue_state_only_retry(session, call, round_)
        return Opened(round_, [])
    move_call(call, CallStatus.AWAITING_INPUT)
    agent_expires = utcnow() + timedelta(seconds=settings.elicitation_ttl_seconds)
    for ask in asks:
        agent_request = AgentRequest(
            round_id=round_.id,
            call_id=call.id,
            owner_id=run.owner_id,
            key=ask.key,
            method=ask.method,
            params_json=json.dumps(ask.params),
            expires_at=agent_expires,
        )
        if ask.method in answered_here:
            _answer_roots(session, call, agent_request, roots)
        session.add(agent_request)
    if not questions:
        if all(ask.method in answered_here for ask in asks):
            await session.flush()
            await queue_resume_if_complete(session=session, round_=round_, actor=SYSTEM)
        return Opened(round_, [])
    params = json.loads(call.sent_params_json)
    with session.no_autoflush:  # the team's rules do not depend on this round
        resolved = await policy_of_call(session=session, call=call, team_id=run.team_id)
    policy = resolved.policy
    ttl = (
        timedelta(minutes=policy.expiry_minutes)
        if policy.expiry_minutes is not None
        else timedelta(seconds=settings.elicitation_ttl_seconds)
    )
    if held:  # the server waits no longer than the console holds its request, nor than it said it waits
        known = (
            await session.execute(select(McpServer.push_hold_seconds).where(McpServer.id == call.server_id))
        ).scalar_one()
        hold = settings.legacy_hold_seconds if known is None else min(settings.legacy_hold_seconds, known)
        ttl = min(ttl, timedelta(seconds=hold))
    expires = utcnow() + ttl
    rows = [_elicitation(call, run, round_, q, server, params, expires) for q in questions]
    for row in rows:
        keep_policy(row, resolved)
    session.add_all(rows)
    restarted = None if held else job.restart_of
    if restarted is None:  # all are asked: marking it (as `announce` does) here joins the call's UPDATE
        call.asked_people = True
    await session.flush()
    if restarted is not None:
        await _reapply(session, call, restarted, rows)
        await queue_resume_if_complete(session=session, round_=round_, actor=SYSTEM)
    asked = [row for row in rows if row.status == QuestionStatus.PENDING]
    await announce(session=session, settings=settings, call=call, server=server, questions=asked)
    return Opened(round_, asked)


def _answer_roots(session: AsyncSession, call: Call, row: AgentRequest, roots: tuple[Root, ...]) -> None:
    """A `roots/list` request answered with the roots an admin set, asking nobody."""
    move_agent_request(row, AgentRequestStatus.ANSWERED)
    row.answered_at = utcnow()
    row.response_json = json.dumps(roots_result(roots))
    record_event(
        session=session,
        actor=SYSTEM,
        action="roots_answered",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={"round": call.round, "key": row.key, "roots": [root.uri for root in roots]},
    )


def _elicitation(
    call: Call, run: Run, round_: CallRound, q: Question, server: str, params: Any, expires: Any
) -> Elicitation:
    return Elicitation(
        round_id=round_.id,
        call_id=call.id,
        team_id=run.team_id,
        owner_id=run.owner_id,
        key=q.key,
        mode=q.mode,
        message=q.message,
        schema_json=json.dumps(q.schema) if q.schema is not None else None,
        url=q.url,
        request_digest=request_digest(q.request),
        digest=shown_digest(
            server=server, method=call.method, params=params, round_n=round_.n, key=q.key, request=q.request
        ),
        status=QuestionStatus.PENDING,
        expires_at=expires,
    )


async def _reapply(
    session: AsyncSession, call: Call, rejected_round_id: str, rows: list[Elicitation]
) -> None:
    earlier = (
        (await session.execute(select(Elicitation).where(Elicitation.round_id == rejected_round_id)))
        .scalars()
        .all()
    )
    by_question = {(e.key, e.request_digest): e for e in earlier if e.status != QuestionStatus.PENDING}
    for row in rows:
        match = by_question.get((row.key, row.request_digest))
        if match is None:
            continue
        move_question(row, QuestionStatus(match.status))
        row.content_json, row.content_digest = match.content_json, match.content_digest
        row.decided_by, row.decided_at, row.reapplied_from = match.decided_by, utcnow(), match.id
        record_event(
            session=session,
            actor=SYSTEM,
            action="answer_reapplied",
            subject_type="elicitation",
            subject_id=row.id,
            call_id=call.id,
            payload={"key": row.key, "from": match.id, "status": match.status},
        )


async def _queue_state_only_retry(session: AsyncSession, call: Call, round_: CallRound) -> None:
    streak = (
        await session.execute(
            select(func.count())
            .select_from(CallRound)
            .where(CallRound.call_id == call.id, CallRound.input_requests_json == "{}")
        )
    ).scalar_one()
    delay = 0.0 if streak <= 1 else min(STATE_ONLY_BACKOFF_START * 2 ** (streak - 2), STATE_ONLY_BACKOFF_CAP)
    move_round(round_, RoundStatus.READY)
    move_call(call, CallStatus.RESUMING)
    session.add(
        DispatchJob(
            call_id=call.id,
            round_id=round_.id,
            kind=JobKind.RESUME,
            status=JobStatus.READY,
            not_before=utcnow() + timedelta(seconds=delay),
        )
    )
