"""Runs: the list of runs the signed-in person may see, and one run's timeline of calls and answers."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from console.calls.listing import PAGE_SIZE, RUN_STATES, list_runs
from console.reports.timeline import run_timeline
from console.transactions import commit
from console.web.auth import WebUser
from console.web.deps import DbSession
from console.web.htmx import is_htmx
from console.web.templating import render

router = APIRouter(include_in_schema=False)

State = Annotated[str | None, Query(pattern=f"^({'|'.join(RUN_STATES)})?$")]
Whose = Annotated[str | None, Query(pattern="^(mine)?$")]
STATE_WORDS = {
    "waiting": "waiting for an answer",
    "interrupted": "interrupted",
    "running": "running",
    "failed": "failed",
    "completed": "completed",
    "idle": "no calls yet",
}


@router.get("/runs")
async def runs_page(
    request: Request,
    session: DbSession,
    user: WebUser,
    state: State = None,
    whose: Whose = None,
    team: str | None = None,
    before: str | None = None,
) -> Response:
    filters = {"state": state or None, "whose": whose or None, "team": team or None}
    rows = await list_runs(
        session=session,
        viewer=user.viewer,
        state=filters["state"],
        mine=filters["whose"] == "mine",
        team_id=filters["team"],
        before=before,
        limit=PAGE_SIZE,
    )
    await commit(session)  # end the read: on SQLite an open transaction holds the write lock
    applied = {k: v for k, v in filters.items() if v}
    next_before = rows[-1].id if len(rows) == PAGE_SIZE else None
    context = {
        "user": user,
        "runs": rows,
        "filters": filters,
        "states": STATE_WORDS,
        "query": urlencode({**applied, **({"before": before} if before else {})}),
        "next_query": urlencode({**applied, "before": next_before or ""}),
        "next_before": next_before,
        "teams": sorted(user.viewer.team_names.items(), key=lambda item: item[1]),
        "sees_others": bool(user.viewer.teams_seeing_every_run),
    }
    if is_htmx(request):
        return render(request, "runs/index.html", context, block="run_list")
    return render(request, "runs/index.html", context)


@router.get("/runs/{run_id}")
async def run_page(run_id: str, request: Request, session: DbSession, user: WebUser) -> Response:
    timeline = await run_timeline(session=session, viewer=user.viewer, run_id=run_id)
    await commit(session)
    return render(request, "runs/detail.html", {"user": user, "t": timeline})
