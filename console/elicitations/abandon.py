"""Ending a call that waits for input when its round can never be answered (a sampling request refused, an
agent that never answered the server): the call is abandoned with the reason, nothing is sent back."""

from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.models import AgentRequest, Call, Elicitation


async def abandon_waiting_call(
    *, session: AsyncSession, call_id: str, round_id: str, key: str, reason: str, actor: Actor, now: datetime
) -> None:
    """Abandon the call (if it still waits) and supersede what else its round waits for; the audit log
    names the request (`key`) and why. The caller commits."""
    await session.execute(
        update(Call)
        .where(Call.id == call_id, Call.status == "awaiting_input")
        .values(status="abandoned", updated_at=now, error_json=json.dumps({"message": reason}))
    )
    for pending_in in (Elicitation, AgentRequest):
        await session.execute(
            update(pending_in)
            .where(pending_in.round_id == round_id, pending_in.status == "pending")
            .values(status="superseded")
        )
    record_event(
        session=session,
        actor=actor,
        action="call_abandoned",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"reason": reason, "key": key},
    )
