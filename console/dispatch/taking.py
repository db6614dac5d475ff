"""An answer hands the resume it completes to this process's dispatcher, as a new call does
(console/dispatch/follow.py): the resume is recorded as being sent in the answer's own transaction and
sent once that commits, with no claim and no transaction of its own."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import DispatchJob
from console.db import utcnow
from console.dispatch.signals import Signals
from console.dispatch.worker import Claimed, Dispatcher
from console.metrics import ANSWER_TO_RESUME


@dataclass
class ResumeHandOver:
    """Give `take` to the answer (`decisions.answer(take_resume=…)`), then call `send` once it returned."""

    signals: Signals
    dispatcher: Dispatcher | None
    _taken: list[tuple[Dispatcher, Claimed, datetime]] = field(default_factory=list)

    async def take(self, session: AsyncSession, job: DispatchJob) -> None:
        dispatcher = self.dispatcher
        if dispatcher is None:
            return
        claimed = await dispatcher.take_resume(session, job)
        if claimed is not None:
            self._taken.append((dispatcher, claimed, job.created_at))

    def send(self, queued: bool) -> None:
        """After the answer committed: send the resume it took, or, when it `queued` one it did not take,
        wake whichever dispatcher polls."""
        taken, self._taken = self._taken, []
        for dispatcher, claimed, created in taken:
            ANSWER_TO_RESUME.observe((utcnow() - created).total_seconds())
            dispatcher.hand_over(claimed)
        if queued and not taken:
            self.signals.work_available()
