"""Telling people and agents about a call: every new question goes to the notifications
(console/notify/questions.py) in the transaction that created it, and what happens to a call afterwards
(it needs input, it ends, a question of it is answered) is written as a notice in the transaction that
did it, which console/calls/fanout.py turns into deliveries. Whether a person may still be asked a
question, and whether it still waits, is read here when its emails go (`may_answer`, `still_pending`)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation, call_target
from console.calls.states import CallStatus, QuestionStatus
from console.config import Settings
from console.identity.models import Membership
from console.metrics import CALL_DURATION
from console.notify.models import Notice
from console.notify.questions import AskedQuestion, queue_question_created
from console.policies.rules import Escalation, refusal

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
    *, session: AsyncSession, settings: Settings, call: Call, server: str, questions: list[Elicitation]
) -> None:
    """Queue the notifications of `questions` (flushed, so they have ids, and with their policy kept) of
    `call` to `server`."""
    if not questions:
        return
    call.asked_people = True
    if call.callback_url is not None:
        session.add(Notice(event=INPUT_REQUIRED, subject_id=call.id, call_id=call.id))
    for question in questions:
        asked = asked_question(question, call, server)
        await queue_question_created(session=session, settings=settings, question=asked)


def asked_question(question: Elicitation, call: Call, server: str) -> AskedQuestion:
    """What the notifications of `question` (of `call` to `server`) say of it, under its kept policy."""
    after, group = question.escalate_after_minutes, question.escalate_to
    return AskedQuestion(
        id=question.id,
        call_id=question.call_id,
        team_id=question.team_id,
        owner_id=question.owner_id,
        mode=question.mode,
        message=question.message,
        answerers=question.answerers,
        no_self_approval=question.no_self_approval,
        expires_at=question.expires_at,
        server=server,
        target=call_target(call.params_json) or call.method,
        escalation=Escalation.parse(group, after) if after is not None and group is not None else None,
    )


def call_ended(session: AsyncSession, call: Call) -> None:
    """Note that `call` reached its end (its status set), if anyone may be told: its requester and the
    team's webhooks when it asked people or was interrupted, its agent when it gave a callback URL. A
    plain call that asked nobody and wants no callback costs nothing here. The call's duration goes to
    the metrics."""
    if call.status in ENDED:
        CALL_DURATION.labels(call.status).observe((call.updated_at - call.created_at).total_seconds())
    event = ENDED.get(call.status)
    if event is not None and (
        call.asked_people or call.callback_url or call.status == CallStatus.INTERRUPTED
    ):
        session.add(Notice(event=event, subject_id=call.id, call_id=call.id))


def call_ended_by_id(session: AsyncSession, call_id: str, status: str) -> None:
    """`call_ended` for an update that set the status without loading the call (the fan-out checks who
    wants to know)."""
    session.add(Notice(event=ENDED[status], subject_id=call_id, call_id=call_id))


def question_answered(session: AsyncSession, question: Elicitation) -> None:
    """Note that a person answered `question` (accepted, declined or cancelled it)."""
    session.add(Notice(event=ANSWERED, subject_id=question.id, call_id=question.call_id))


async def may_answer(session: AsyncSession, question_id: str, user_id: str) -> bool:
    """Whether the person may answer the question with their role in its team now (its emails go only to
    them)."""
    found = (
        await session.execute(
            select(Elicitation, Membership.role)
            .outerjoin(
                Membership,
                (Membership.team_id == Elicitation.team_id) & (Membership.user_id == user_id),
            )
            .where(Elicitation.id == question_id)
        )
    ).one_or_none()
    if found is None:
        return False
    question, role = found
    reason = refusal(
        role=role,
        is_owner=question.owner_id == user_id,
        mode=question.mode,
        answerers=question.answerers,
        no_self_approval=question.no_self_approval,
    )
    return reason is None


async def still_pending(session: AsyncSession, question_id: str) -> bool:
    """Whether the question still waits for an answer (its reminders go out only then)."""
    status = (await session.execute(select(Elicitation.status).where(Elicitation.id == question_id))).scalar()
    return status == QuestionStatus.PENDING
