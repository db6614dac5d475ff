"""The figures of `/metrics` that live in the database, read when it is scraped."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, DispatchJob, Elicitation
from console.calls.states import JobStatus, QuestionStatus
from console.identity.models import Team
from console.metrics import Readings


async def read_into(readings: Readings, session: AsyncSession) -> None:
    """Calls by status, questions waiting by team, and dispatch jobs ready to be sent."""
    calls = await session.execute(select(Call.status, func.count()).group_by(Call.status))
    readings.calls = {str(status): int(count) for status, count in calls.all()}
    waiting = await session.execute(
        select(Team.name, func.count())
        .select_from(Elicitation)
        .join(Team, Team.id == Elicitation.team_id)
        .where(Elicitation.status == QuestionStatus.PENDING)
        .group_by(Team.name)
    )
    readings.waiting = {str(team): int(count) for team, count in waiting.all()}
    readings.queue = (
        await session.execute(
            select(func.count()).select_from(DispatchJob).where(DispatchJob.status == JobStatus.READY)
        )
    ).scalar_one()
