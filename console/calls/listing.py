"""Finding runs: the viewer's own, and their teams' where their role lets them see every run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Run
from console.errors import NotFound
from console.identity import Viewer
from console.identity.models import Team, User

PAGE_SIZE = 50
# A run's state, from its calls: the first that holds wins, in this order.
RUN_STATES = ("waiting", "interrupted", "running", "failed", "completed", "idle")
_CALL_STATUSES = {
    "waiting": ("awaiting_input",),
    "interrupted": ("interrupted",),
    "running": ("running", "resuming"),
    "failed": ("failed", "abandoned"),
    "completed": ("completed", "declined", "cancelled"),  # ended, here or at an approval gate
}


@dataclass(frozen=True)
class RunRow:
    id: str
    team: str
    owner: str
    owner_id: str
    agent: str
    title: str
    created_at: datetime
    calls: int
    state: str


def run_state() -> Any:
    """The state of the run in the current row: waiting while any call waits for a person, and so on."""

    def any_call(statuses: tuple[str, ...]) -> Any:
        return exists().where(Call.run_id == Run.id, Call.status.in_(statuses))

    whens = [(any_call(statuses), state) for state, statuses in _CALL_STATUSES.items()]
    return case(*whens, else_="idle")


async def list_runs(
    *,
    session: AsyncSession,
    viewer: Viewer,
    state: str | None = None,
    mine: bool = False,
    team_id: str | None = None,
    before: str | None = None,
    limit: int = PAGE_SIZE,
) -> list[RunRow]:
    """Runs the viewer may see, newest first, keyset-paginated by `before` (a run id). The caller ends
    the read (on SQLite an open transaction holds the write lock).

    Raises:
        NotFound: `before` names no run the viewer may see.
    """
    own = Run.team_id.in_(list(viewer.roles)) & (Run.owner_id == viewer.user_id)
    visible = own if mine else own | Run.team_id.in_(viewer.teams_seeing_every_run)
    state_of = run_state()
    calls = select(func.count()).where(Call.run_id == Run.id).correlate(Run).scalar_subquery()
    query = (
        select(Run, Team.name, User.name, calls, state_of)
        .join(Team, Team.id == Run.team_id)
        .join(User, User.id == Run.owner_id)
        .where(visible)
    )
    if state is not None:
        query = query.where(state_of == state)
    if team_id is not None:
        query = query.where(Run.team_id == team_id)
    if before is not None:
        anchor = (await session.execute(select(Run).where(Run.id == before, visible))).scalar_one_or_none()
        if anchor is None:
            raise NotFound(f"no run {before!r}")
        query = query.where(
            (Run.created_at < anchor.created_at)
            | ((Run.created_at == anchor.created_at) & (Run.id < anchor.id))
        )
    query = query.order_by(Run.created_at.desc(), Run.id.desc()).limit(limit)
    rows = (await session.execute(query)).all()
    return [
        RunRow(run.id, team, owner, run.owner_id, run.agent, run.title, run.created_at, n, st)
        for run, team, owner, n, st in rows
    ]
