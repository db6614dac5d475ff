"""The call aggregate's states and the one table of how each may move between them: the call's, its
rounds', their questions' and agent requests', and its outbox jobs'.

Every path that changes a call's status goes through `console/calls/moves.py`, which checks this table:
an ORM change raises on a move the table does not allow, and a plain UPDATE only matches a call in a state
the table lets move there. The promise it keeps: a call that ended stays ended, so nothing it would
have sent is sent after; only an interrupted call goes on, when a person (or, for an idempotent server,
the console) sends its request again, or ends abandoned.
"""

from __future__ import annotations

from enum import StrEnum

from console.transitions import Moves


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
# Ended as the agent sees it: no more answer comes unless a person sends an interrupted call again.
TERMINAL = tuple(status for status in CallStatus if status not in GOING)


CALLS = Moves("call", START, CALL_MOVES)
FINAL = CALLS.final


class RoundStatus(StrEnum):
    OPEN = "open"  # its questions (or its agent's requests) wait
    READY = "ready"  # all answered: its resume is queued, or a held request carries the answers
    SENT = "sent"  # its resume went out
    ANSWERED = "answered"  # the server took its answers (or the console ended the call at its own round)
    SUPERSEDED = "superseded"  # a restart replaced it, or the server stopped waiting for a held round


_ROUND_OVER = frozenset({RoundStatus.ANSWERED, RoundStatus.SUPERSEDED})
ROUNDS = Moves(
    "round",
    RoundStatus.OPEN,
    {
        # a held round's answers go on the request held open; the server may stop waiting before them
        RoundStatus.OPEN: frozenset({RoundStatus.READY}) | _ROUND_OVER,
        RoundStatus.READY: frozenset({RoundStatus.SENT}) | _ROUND_OVER,
        RoundStatus.SENT: _ROUND_OVER,
        RoundStatus.ANSWERED: frozenset(),
        RoundStatus.SUPERSEDED: frozenset(),
    },
)


class QuestionStatus(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    EXPIRED = "expired"  # answered as its policy says (its expiry_action)
    SUPERSEDED = "superseded"  # its call was abandoned, or its round ended without it
    INTERRUPTED = "interrupted"  # the server stopped waiting, or a restore held its call


DECIDED = tuple(status for status in QuestionStatus if status is not QuestionStatus.PENDING)
QUESTIONS = Moves(
    "question",
    QuestionStatus.PENDING,
    {QuestionStatus.PENDING: frozenset(DECIDED), **{status: frozenset() for status in DECIDED}},
)


class QuestionMode(StrEnum):
    """What a question asks (see the comment on POLICY_MODES in console/calls/models.py)."""

    FORM = "form"  # the server's form
    URL = "url"  # a link its owner opens
    GATE = "gate"  # the console's own, before the call is sent
    SAMPLING = "sampling"  # a reply people write to the server's sampling request
    CONNECT = "connect"  # the console's own: its owner connects their account at the server


class SignatureAction(StrEnum):
    """One approver's part in a question several must approve."""

    ACCEPT = "accept"
    DECLINE = "decline"
    CANCEL = "cancel"


class AgentRequestStatus(StrEnum):
    PENDING = "pending"
    ANSWERED = "answered"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"
    INTERRUPTED = "interrupted"  # closed with the questions of a held round its server stopped waiting for


AGENT_REQUESTS = Moves(
    "agent request",
    AgentRequestStatus.PENDING,
    {
        AgentRequestStatus.PENDING: frozenset(AgentRequestStatus) - {AgentRequestStatus.PENDING},
        **{status: frozenset() for status in AgentRequestStatus if status is not AgentRequestStatus.PENDING},
    },
)


class JobStatus(StrEnum):
    READY = "ready"  # due at its not_before
    CLAIMED = "claimed"  # a dispatcher took it; nothing sent yet
    SENDING = "sending"  # out at the server, under its sender's lease
    PARKED = "parked"  # refused until its owner connects (or opens the links the server asked for)
    INTERRUPTED = "interrupted"  # its outcome was lost: a person decides whether it goes again
    DONE = "done"


JOBS = Moves(
    "job",
    JobStatus.READY,
    {
        # the process that queued a job may send it at once, unclaimed; a restore holds a job that is, or
        # may be, on its way, and ends the older ones of its call
        JobStatus.READY: frozenset(
            {JobStatus.CLAIMED, JobStatus.SENDING, JobStatus.DONE, JobStatus.INTERRUPTED}
        ),
        # a claim whose lease ran out before anything was sent is claimed again; a claimer lets go of one
        # it cannot send yet
        JobStatus.CLAIMED: frozenset(
            {JobStatus.CLAIMED, JobStatus.READY, JobStatus.SENDING, JobStatus.DONE, JobStatus.INTERRUPTED}
        ),
        JobStatus.SENDING: frozenset(
            {JobStatus.DONE, JobStatus.READY, JobStatus.PARKED, JobStatus.INTERRUPTED}
        ),
        JobStatus.PARKED: frozenset({JobStatus.READY, JobStatus.DONE, JobStatus.INTERRUPTED}),
        JobStatus.INTERRUPTED: frozenset({JobStatus.READY}),
        JobStatus.DONE: frozenset(),
    },
)


class JobKind(StrEnum):
    INITIAL = "initial"  # the call's first send
    RESUME = "resume"  # a ready round's answers (for a task: tasks/update)
    RESTART = "restart"  # round 1 again after the server refused a request state
    POLL = "poll"  # tasks/get
    CANCEL = "cancel"  # tasks/cancel
