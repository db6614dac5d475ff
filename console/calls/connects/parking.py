"""Connects: a call waits while its owner connects their account at an OAuth-protected server.

When the server refuses the owner's token (or its absence) and no refresh helps, nothing was served: the
refused request is parked (its outbox row `parked`, claimed by no dispatcher) and the call gets a round of
the console's own with one question of mode "connect", the owner's alone (the same-user rule of links):
"Connect notes: you will sign in at auth.example and grant notes:read." Connecting accepts it and the
parked request goes out again as it was; declining, cancelling or letting it expire ends the call where
it stands (console/calls/connects/deciding.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.calls.models import Call, CallRound, DispatchJob, Elicitation, Run
from console.calls.moves import move_call, move_job, move_round
from console.calls.notices import announce
from console.calls.rounds.asking import request_digest, shown_digest
from console.calls.states import CallStatus, JobKind, JobStatus, QuestionMode, QuestionStatus, RoundStatus
from console.config import Settings
from console.db import utcnow
from console.mcp.challenge import Challenge
from console.oauth.hints import SignInHint

CONNECT_METHOD = "io.approval-console/connect"
CONNECT_KEY = "connect"
PARKED = JobStatus.PARKED  # a refused request's outbox row while its owner connects
MAX_CONNECTS = 3  # connect questions per call: a server refusing each fresh grant fails the call instead


def connect_message(server: str, hint: SignInHint) -> str:
    where = (
        f"you will sign in at {hint.auth_host}"
        if hint.auth_host
        else "you will sign in at its authorization server"
    )
    grant = f" and grant {hint.scope}" if hint.scope else ""
    return f"Connect {server}: {where}{grant}."


async def may_ask_to_connect(session: AsyncSession, call_id: str) -> bool:
    """Whether the call may wait for its owner to connect once more."""
    asked = await session.execute(
        select(func.count())
        .select_from(Elicitation)
        .where(Elicitation.call_id == call_id, Elicitation.mode == QuestionMode.CONNECT)
    )
    return int(asked.scalar_one()) < MAX_CONNECTS


async def open_connect(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    server: str,
    challenge: Challenge,
    hint: SignInHint,
    settings: Settings,
) -> Elicitation:
    """Park `job` (the refused request) and put the call behind a connect question. The caller commits."""
    request = {
        "method": CONNECT_METHOD,
        "params": {
            "server": server,
            "authorizationServer": hint.auth_host,
            "scope": hint.scope,
            "challenge": asdict(challenge),
        },
    }
    call.round += 1
    round_ = CallRound(
        call_id=call.id,
        n=call.round,
        input_requests_json=json.dumps({CONNECT_KEY: request}),
        status=RoundStatus.OPEN,
    )
    session.add(round_)
    await session.flush()
    now = utcnow()
    question = Elicitation(
        round_id=round_.id,
        call_id=call.id,
        team_id=run.team_id,
        owner_id=run.owner_id,
        key=CONNECT_KEY,
        mode=QuestionMode.CONNECT,
        message=connect_message(server, hint),
        request_digest=request_digest(request),
        digest=shown_digest(
            server=server,
            method=call.method,
            params=json.loads(call.params_json),
            round_n=round_.n,
            key=CONNECT_KEY,
            request=request,
        ),
        status=QuestionStatus.PENDING,
        answerers="owner",
        policy_json=json.dumps({"applied": [], "destructive": False}),
        expires_at=now + timedelta(seconds=settings.elicitation_ttl_seconds),
    )
    session.add(question)
    park(job, call, now)
    await session.flush()
    await announce(session=session, settings=settings, call=call, server=server, questions=[question])
    record_event(
        session=session,
        actor=SYSTEM,
        action="connect_asked",
        subject_type="elicitation",
        subject_id=question.id,
        call_id=call.id,
        payload={
            "round": round_.n,
            "authorization_server": hint.auth_host,
            "scope": hint.scope,
            "insufficient_scope": challenge.insufficient_scope,
        },
    )
    return question


def park(job: DispatchJob, call: Call, now: datetime) -> None:
    """Park the refused request `job` while people do what the server asked first (connect, open links);
    the call waits for them."""
    move_job(job, PARKED)
    job.claimed_by, job.lease_until = None, None
    # Refused before anything was served: it goes out again with a new attestation of the same approval,
    # rather than one that may have expired meanwhile.
    job.attestation = None
    move_call(call, CallStatus.AWAITING_INPUT, now)


async def parked_job(session: AsyncSession, call_id: str) -> DispatchJob | None:
    """The call's parked request, if it has one."""
    found = await session.execute(
        select(DispatchJob).where(DispatchJob.call_id == call_id, DispatchJob.status == PARKED)
    )
    return found.scalar_one_or_none()


def send_parked_again(parked: DispatchJob, call: Call, round_: CallRound, now: datetime) -> None:
    """What the server asked first is done: `round_` is answered and the parked request queued again."""
    move_round(round_, RoundStatus.ANSWERED)
    move_job(parked, JobStatus.READY)
    parked.not_before, parked.last_error, parked.attempts = now, None, 0
    move_call(call, CallStatus.RESUMING if parked.kind == JobKind.RESUME else CallStatus.RUNNING, now)
