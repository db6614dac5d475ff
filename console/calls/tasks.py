"""Stopping a task: a call its server runs as a task (the tasks extension) that ends here, abandoned, gets no
more polls and one `tasks/cancel`, which the dispatcher sends (cooperative: the server may still finish)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, DispatchJob
from console.calls.moves import job_may_become
from console.calls.states import JobKind, JobStatus

POLL, CANCEL = JobKind.POLL, JobKind.CANCEL


async def cancel_task_of(*, session: AsyncSession, call_id: str) -> bool:
    """Queue the `tasks/cancel` of the call's task, if the server runs it as one, and drop its queued
    poll; whether a cancel was queued. The caller ends the call and commits."""
    task_id = (await session.execute(select(Call.task_id).where(Call.id == call_id))).scalar_one_or_none()
    if task_id is None:
        return False
    await session.execute(
        update(DispatchJob)
        .where(
            DispatchJob.call_id == call_id,
            DispatchJob.kind == POLL,
            DispatchJob.status == JobStatus.READY,
            job_may_become(JobStatus.DONE),
        )
        .values(status=JobStatus.DONE)
    )
    session.add(DispatchJob(call_id=call_id, kind=CANCEL, status=JobStatus.READY))
    return True
