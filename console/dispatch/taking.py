"""An answer hands the resume it completes to this process's dispatcher, as a new call does
(console/dispatch/follow.py): the resume is recorded as being sent in the answer's own transaction and
sent once that commits, with no claim and no transaction of its own.

Every place that answers a question (the API, the question page, the link page, the gateway, a connect's
callback) ends its answer with `resume_after_commit`, in the answer's transaction."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls.questions.decisions import Decision, answer
from console.db import utcnow
from console.dispatch.signals import Signals
from console.dispatch.worker import Claimed, Dispatcher
from console.errors import Conflict, Forbidden, Gone, InvalidInput
from console.identity import Viewer
from console.metrics import ANSWER_TO_RESUME
from console.transactions import after_commit, transaction


async def resume_after_commit(
    *, session: AsyncSession, signals: Signals, dispatcher: Dispatcher | None, decision: Decision
) -> None:
    """After `decision`, in its transaction: this process's dispatcher takes the resume it queued, to send
    it once the transaction commits; then, too, whoever waits on the call hears of it (a declined gate
    ended it), and, unless this dispatcher took a resume, whichever dispatcher polls is woken for what
    the decision may have made ready (a gate's first send, a connect's parked request, a resume this
    dispatcher could not take, a task's cancel after a refused sampling request)."""
    resume = decision.resume
    claimed = None
    if resume is not None and dispatcher is not None:
        claimed = await dispatcher.take_resume(session, resume)
        if claimed is not None:
            after_commit(session, partial(_send, dispatcher, claimed, resume.created_at))
    if claimed is None:
        after_commit(session, signals.work_available)
    after_commit(session, partial(signals.call_changed, decision.call_id))


def _send(dispatcher: Dispatcher, claimed: Claimed, queued_at: datetime) -> None:
    ANSWER_TO_RESUME.observe((utcnow() - queued_at).total_seconds())
    dispatcher.hand_over(claimed)


async def accept_connects(
    *,
    factory: async_sessionmaker[AsyncSession],
    signals: Signals,
    dispatcher: Dispatcher | None,
    viewer: Viewer,
    question_ids: list[str],
) -> list[Decision]:
    """The viewer connected their account: accept their connect questions (`calls.questions.connected`),
    each in a transaction of its own and resumed as any answer; the decisions made. A question decided,
    expired or refused meanwhile is left as it is (a refusal keeps its record)."""
    decided: list[Decision] = []
    for question_id in question_ids:
        try:
            async with transaction(factory) as session:
                decision = await answer(
                    session=session, viewer=viewer, elicitation_id=question_id, action="accept"
                )
                await resume_after_commit(
                    session=session, signals=signals, dispatcher=dispatcher, decision=decision
                )
        except (Conflict, Gone, Forbidden, InvalidInput):
            continue
        decided.append(decision)
    return decided
