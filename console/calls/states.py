"""A call's states and the one table of how it may move between them.

Every path that changes a call's status goes through `console/calls/moves.py`, which checks this table:
an ORM change raises on a move the table does not allow, and a plain UPDATE only matches a call in a state
the table lets move there. The promise it keeps: a call that ended stays ended, so nothing it would
have sent is sent after; only an interrupted call goes on, when a person (or, for an idempotent server,
the console) sends its request again, or ends abandoned.
"""

from __future__ import annotations

from enum import StrEnum


class CallStatus(StrEnum):
    RUNNING = "running"  # its request is being sent, or is out at the server
    AWAITING_INPUT = "awaiting_input"  # questions wait for people (or its agent)
    RESUMING = "resuming"  # answered: the resume is queued or out
    COMPLETED = "completed"  # the server's result
    FAILED = "failed"  # an error the agent is told
    INTERRUPTED = "interrupted"  # its request's outcome was lost; a person may send it again
    ABANDONED = "abandoned"  # given up (its agent, a person, expiry, the round cap)
    DECLINED = "declined"  # a person declined the console's own question (a gate, a connect, links)
    CANCELLED = "cancelled"  # a person cancelled at the console's own question


GOING = frozenset({CallStatus.RUNNING, CallStatus.AWAITING_INPUT, CallStatus.RESUMING})
_ENDED_BY_ANYONE = frozenset(
    {CallStatus.COMPLETED, CallStatus.FAILED, CallStatus.INTERRUPTED, CallStatus.ABANDONED}
)
_ANSWERED_AT_THE_CONSOLE = frozenset({CallStatus.DECLINED, CallStatus.CANCELLED})

# Where each state may move. A call starts RUNNING; the states with no moves are final.
CALL_MOVES: dict[CallStatus, frozenset[CallStatus]] = {
    CallStatus.RUNNING: GOING | _ENDED_BY_ANYONE,
    CallStatus.AWAITING_INPUT: GOING | _ENDED_BY_ANYONE | _ANSWERED_AT_THE_CONSOLE,
    CallStatus.RESUMING: GOING | _ENDED_BY_ANYONE,
    CallStatus.INTERRUPTED: frozenset({CallStatus.RESUMING, CallStatus.ABANDONED}),
    CallStatus.COMPLETED: frozenset(),
    CallStatus.FAILED: frozenset(),
    CallStatus.ABANDONED: frozenset(),
    CallStatus.DECLINED: frozenset(),
    CallStatus.CANCELLED: frozenset(),
}
START = CallStatus.RUNNING
FINAL = frozenset(status for status, moves in CALL_MOVES.items() if not moves)
# Ended as the agent sees it: no more answer comes unless a person sends an interrupted call again.
TERMINAL = tuple(status for status in CallStatus if status not in GOING)


class IllegalMove(RuntimeError):
    """A change of a call's status the table does not allow: a bug, stopped before it is written."""


def may_move(old: str, new: CallStatus) -> bool:
    return new in CALL_MOVES.get(CallStatus(old), frozenset())


def sources_of(new: CallStatus) -> tuple[CallStatus, ...]:
    """The states a call may move to `new` from."""
    return tuple(status for status, moves in CALL_MOVES.items() if new in moves)
