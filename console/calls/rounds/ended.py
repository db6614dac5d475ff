"""A call ended at a round of the console's own (a gate, a connect), before anything more was sent."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.models import Call, CallRound
from console.calls.moves import move_call, move_round
from console.calls.notices import call_ended
from console.calls.states import CallStatus, RoundStatus


def end_at_console_round(
    *,
    session: AsyncSession,
    call: Call,
    round_: CallRound,
    status: CallStatus,
    error: dict[str, Any],
    actor: Actor,
) -> None:
    """The round answered, the call `status` with `error` for the agent (and its model), and the
    `call_<status>` event carrying the same. The caller commits."""
    move_round(round_, RoundStatus.ANSWERED)
    move_call(call, status)
    call.error_json = json.dumps(error)
    call_ended(session, call)
    record_event(
        session=session,
        actor=actor,
        action=f"call_{status}",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload=error,
    )
