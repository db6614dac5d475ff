"""The only ways the statuses of the call aggregate change: `move_call` (or `move_round`, `move_question`,
`move_agent_request`, `move_job`) on a loaded row, `may_become` (or `round_may_become`, ...) in an UPDATE's
WHERE clause. All follow the tables of `console/calls/states.py`."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement

from console.calls.models import AgentRequest, Call, CallRound, DispatchJob, Elicitation
from console.calls.states import (
    AGENT_REQUESTS,
    CALLS,
    JOBS,
    QUESTIONS,
    ROUNDS,
    AgentRequestStatus,
    CallStatus,
    JobStatus,
    QuestionStatus,
    RoundStatus,
)
from console.db import utcnow
from console.transitions import IllegalMove


def move_call(call: Call, new: CallStatus, now: datetime | None = None) -> None:
    """Set the call's status to `new` (and its `updated_at`).

    Raises:
        IllegalMove: the table does not let the call's current status move to `new`.
    """
    if not CALLS.may_move(call.status, new):
        raise IllegalMove(f"call {call.id} may not move from {call.status} to {new}")
    call.status, call.updated_at = new, now or utcnow()


def may_become(new: CallStatus, status: Any = Call.status) -> ColumnElement[bool]:
    """The condition an UPDATE that sets a call's status to `new` adds: the call is in a state that may
    move there (`status` is the status column the statement reads, `Call.status` or a table's)."""
    return CALLS.may_become(new, status)


def move_round(round_: CallRound, new: RoundStatus) -> None:
    """Set the round's status to `new`; IllegalMove if its table does not allow it."""
    ROUNDS.move(round_, new)


def round_may_become(new: RoundStatus) -> ColumnElement[bool]:
    return ROUNDS.may_become(new, CallRound.status)


def move_question(question: Elicitation, new: QuestionStatus) -> None:
    """Set the question's status to `new`; IllegalMove if its table does not allow it."""
    QUESTIONS.move(question, new)


def question_may_become(new: QuestionStatus) -> ColumnElement[bool]:
    return QUESTIONS.may_become(new, Elicitation.status)


def move_agent_request(request: AgentRequest, new: AgentRequestStatus) -> None:
    """Set the agent request's status to `new`; IllegalMove if its table does not allow it."""
    AGENT_REQUESTS.move(request, new)


def agent_request_may_become(new: AgentRequestStatus) -> ColumnElement[bool]:
    return AGENT_REQUESTS.may_become(new, AgentRequest.status)


def move_job(job: DispatchJob, new: JobStatus) -> None:
    """Set the outbox job's status to `new`; IllegalMove if its table does not allow it."""
    JOBS.move(job, new)


def job_may_become(new: JobStatus, status: Any = DispatchJob.status) -> ColumnElement[bool]:
    return JOBS.may_become(new, status)
