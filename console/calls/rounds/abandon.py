"""Ending a call that waits for input when its round can never be answered (a sampling request refused, an
agent that never answered the server): the call is abandoned with the reason, nothing is sent back. And
closing what rounds still wait for, which that and a held round the server gave up on share."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.models import AgentRequest, Call, Elicitation
from console.calls.moves import agent_request_may_become, may_become, question_may_become
from console.calls.notices import call_ended_by_id
from console.calls.states import AgentRequestStatus, CallStatus, QuestionStatus
from console.calls.tasks import cancel_task_of


async def abandon_waiting_call(
    *, session: AsyncSession, call_id: str, round_id: str, key: str, reason: str, actor: Actor, now: datetime
) -> None:
    """Abandon the call (if it still waits) and supersede what else its round waits for; the audit log
    names the request (`key`) and why. The caller commits."""
    abandoned = await session.execute(
        update(Call)
        .where(Call.id == call_id, Call.status == CallStatus.AWAITING_INPUT, may_become(CallStatus.ABANDONED))
        .values(status=CallStatus.ABANDONED, updated_at=now, error_json=json.dumps({"message": reason}))
    )
    if abandoned.rowcount == 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        call_ended_by_id(session, call_id, "abandoned")
    await close_pending(session=session, rounds=[round_id], status=QuestionStatus.SUPERSEDED, now=now)
    await cancel_task_of(session=session, call_id=call_id)
    record_event(
        session=session,
        actor=actor,
        action="call_abandoned",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"reason": reason, "key": key},
    )


async def close_pending(*, session: AsyncSession, rounds: Any, status: QuestionStatus, now: datetime) -> int:
    """End what the rounds (ids, or a query of them) still wait for, questions and agent requests alike,
    with `status` (an agent request with the same one of its own); how many there were. The caller commits."""
    questions = await session.execute(
        update(Elicitation)
        .where(Elicitation.round_id.in_(rounds), question_may_become(status))
        .values(status=status, decided_at=now)
    )
    asks = await session.execute(
        update(AgentRequest)
        .where(AgentRequest.round_id.in_(rounds), agent_request_may_become(AgentRequestStatus(status)))
        .values(status=AgentRequestStatus(status))
    )
    return int(questions.rowcount + asks.rowcount)  # type: ignore[attr-defined]  # CursorResults of UPDATEs
