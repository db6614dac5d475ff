"""Telling people a call asks them something: every new question goes to the notifications
(console/notify/questions.py) in the transaction that created it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation, call_target
from console.config import Settings
from console.notify.questions import AskedQuestion, queue_question_created


async def announce(
    *, session: AsyncSession, settings: Settings, call: Call, server: str, questions: list[Elicitation]
) -> None:
    """Queue the notifications of `questions` (flushed, so they have ids) of `call` to `server`."""
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
        )
        await queue_question_created(session=session, settings=settings, question=asked)


async def still_pending(session: AsyncSession, question_id: str) -> bool:
    """Whether the question still waits for an answer (its reminders go out only then)."""
    status = (await session.execute(select(Elicitation.status).where(Elicitation.id == question_id))).scalar()
    return status == "pending"
