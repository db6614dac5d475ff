"""The run page: the timeline of a run's calls, questions, answers and results."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from console.calls.timeline import run_timeline
from console.web.auth import WebUser
from console.web.deps import DbSession
from console.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/runs/{run_id}")
async def run_page(run_id: str, request: Request, session: DbSession, user: WebUser) -> Response:
    timeline = await run_timeline(session=session, viewer=user.viewer, run_id=run_id)
    return render(request, "runs/detail.html", {"user": user, "t": timeline})
