"""Telling people and agents about a call: every new question goes to the notifications
(console/notify/questions.py) in the transaction that created it, and what happens to a call afterwards
(it needs input, it ends, a question of it is answered) is written as a notice in the transaction that
did it, which console/calls/fanout.py turns into deliveries."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation, call_target
from console.config import Settings
from console.metrics import CALL_DURATION
from console.notify.models import Notice
from console.notify.questions import AskedQuestion, queue_question_created
from console.policies.rules import Policy

INPUT_REQUIRED = "call.input_required"  # to the call's callback only: people get question.created
ANSWERED = "question.answered"
# How each way a call can end is announced: declined or cancelled at a gate or a connect is an answer
# the agent gets like a result, so it counts as completed; the status says which.
ENDED = {
    "completed": "call.completed",
    "declined": "call.completed",
    "cancelled": "call.completed",
    "failed": "call.failed",
    "abandoned": "call.failed",
    "interrupted": "call.interrupted",
}


async def announce(
    *,
    session: AsyncSession,
    settings: Settings,
    call: Call,
    server: str,
    questions: list[Elicitation],
    policy: Policy | None = None,
) -> None:
    """Queue the notifications of `questions` (flushed, so they have ids) of `call` to `server`, asked
    under `policy` (its escalation, if any)."""
    if not questions:
        return
    call.asked_people = True
    if call.callback_url is not None:
        session.add(Notice(event=INPUT_REQUIRED, subject_id=call.id, call_id=call.id))
    target = call_target(call.params_json) or call.method
    for question in questions:
        asked = AskedQuestion(
            id=question.id,
            team_id=question.team_id,
            owner_id=question.owner_id,
            mode=question.mode,
            message=question.message,
            answerers=question.answerers,
            no_self_approval=question.no_self_approval,
            expires_at=question.expires_at,
            server=server,
            target=target,
            escalation=policy.escalation if policy is not None else None,
        )
        await queue_question_created(session=session, settings=settings, question=asked)


def call_ended(session: AsyncSession, call: Call) -> None:
    """Note that `call` reached its end (its status set), if anyone may be told: its requester and the
    team's webhooks when it asked people or was interrupted, its agent when it gave a callback URL. A
    plain call that asked nobody and wants no callback costs nothing here. The call's duration goes to
    the metrics."""
    if call.status in ENDED:
        CALL_DURATION.labels(call.status).observe((call.updated_at - call.created_at).total_seconds())
    event = ENDED.get(call.status)
    if event is not None and (call.asked_people or call.callback_url or call.status == "interrupted"):
        session.add(Notice(event=event, subject_id=call.id, call_id=call.id))


def call_ended_by_id(session: AsyncSession, call_id: str, status: str) -> None:
    """`call_ended` for an update that set the status without loading the call (the fan-out checks who
    wants to know)."""
    session.add(Notice(event=ENDED[status], subject_id=call_id, call_id=call_id))


def question_answered(session: AsyncSession, question: Elicitation) -> None:
    """Note that a person answered `question` (accepted, declined or cancelled it)."""
    session.add(Notice(event=ANSWERED, subject_id=question.id, call_id=question.call_id))


async def still_pending(session: AsyncSession, question_id: str) -> bool:
    """Whether the question still waits for an answer (its reminders go out only then)."""
    status = (await session.execute(select(Elicitation.status).where(Elicitation.id == question_id))).scalar()
    return status == "pending"
