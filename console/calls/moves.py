"""The only ways a call's status changes: `move_call` on a loaded call, `may_become` in an UPDATE's
WHERE clause. Both follow the table of `console/calls/states.py`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement

from console.calls.models import Call
from console.calls.states import CallStatus, IllegalMove, may_move, sources_of
from console.db import utcnow


def move_call(call: Call, new: CallStatus, now: datetime | None = None) -> None:
    """Set the call's status to `new` (and its `updated_at`).

    Raises:
        IllegalMove: the table does not let the call's current status move to `new`.
    """
    if not may_move(call.status, new):
        raise IllegalMove(f"call {call.id} may not move from {call.status} to {new}")
    call.status, call.updated_at = new, now or utcnow()


def may_become(new: CallStatus, status: Any = Call.status) -> ColumnElement[bool]:
    """The condition an UPDATE that sets a call's status to `new` adds: the call is in a state that may
    move there (`status` is the status column the statement reads, `Call.status` or a table's)."""
    condition: ColumnElement[bool] = status.in_(sources_of(new))
    return condition
