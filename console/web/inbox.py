"""The inbox: questions the signed-in person may answer, kept live with server-sent events; and the questions
already decided, with who answered what."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import urlencode

import anyio
from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.questions import inbox as questions
from console.identity.sessions import SignedIn
from console.web.auth import WebUser
from console.web.deps import DbSession, RuntimeDep
from console.web.htmx import is_htmx
from console.web.templating import render

router = APIRouter(include_in_schema=False)

PAGE = 50
STREAM_SECONDS = 300.0  # the browser reconnects by itself; bounded streams never pile up
CHECK_SECONDS = 1.0

Mode = Annotated[str | None, Query(pattern="^(form|url|gate|sampling|connect)?$")]
Seen = Annotated[str | None, Query(pattern="^[0-9a-f]{32}$")]
# Sent once the stream compared what the page showed with now: every change after it gets its own event.
LISTENING = ": listening\n\n"
Outcome = Annotated[str | None, Query(pattern=f"^({'|'.join(questions.DECIDED)})?$")]


@router.get("/")
@router.get("/inbox")
async def inbox(
    request: Request,
    session: DbSession,
    user: WebUser,
    team: str | None = None,
    server: str | None = None,
    mode: Mode = None,
    before: str | None = None,
) -> Response:
    filters = {"team": team or None, "server": server or None, "mode": mode or None}
    # Before the list: a change between the two makes the live list refresh once, never miss it.
    seen = None if is_htmx(request) else _token(await _fingerprint(session, user))
    views = await questions.list_questions(
        session=session,
        viewer=user.viewer,
        before=before,
        limit=PAGE,
        team_id=filters["team"],
        server=filters["server"],
        mode=filters["mode"],
    )
    query = urlencode({k: v for k, v in filters.items() if v})
    next_before = views[-1].elicitation.id if len(views) == PAGE else None
    context = {
        "user": user,
        "questions": views,
        "filters": filters,
        "query": query,
        "next_before": next_before,
        "next_query": urlencode({**{k: v for k, v in filters.items() if v}, "before": next_before or ""}),
        "teams": sorted(user.viewer.team_names.items(), key=lambda item: item[1]),
        "seen": seen,
    }
    if is_htmx(request):
        return render(request, "inbox/index.html", context, block="question_list")
    return render(request, "inbox/index.html", context)


@router.get("/decided")
async def decided(
    request: Request,
    session: DbSession,
    user: WebUser,
    outcome: Outcome = None,
    team: str | None = None,
    before: str | None = None,
) -> Response:
    filters = {"outcome": outcome or None, "team": team or None}
    views = await questions.list_decided(
        session=session,
        viewer=user.viewer,
        status=filters["outcome"],
        team_id=filters["team"],
        before=before,
        limit=PAGE,
    )
    applied = {k: v for k, v in filters.items() if v}
    next_before = views[-1].elicitation.id if len(views) == PAGE else None
    context = {
        "user": user,
        "questions": views,
        "filters": filters,
        "outcomes": questions.DECIDED,
        "next_before": next_before,
        "next_query": urlencode({**applied, "before": next_before or ""}),
        "teams": sorted(user.viewer.team_names.items(), key=lambda item: item[1]),
    }
    if is_htmx(request):
        return render(request, "inbox/decided.html", context, block="decided_list")
    return render(request, "inbox/decided.html", context)


@router.get("/inbox/events")
async def inbox_events(
    request: Request, user: WebUser, runtime: RuntimeDep, seen: Seen = None
) -> StreamingResponse:
    """`changed` whenever the viewer's questions change; `seen` is what the page showed (its `_token`)."""
    factory = runtime.factory
    signals = runtime.signals

    async def fingerprint() -> tuple[object, ...]:
        with anyio.CancelScope(shield=True):  # never abandon a SQLite transaction half-way
            async with factory() as session:
                now = await _fingerprint(session, user)
        return now

    async def stream() -> AsyncIterator[str]:
        yield "retry: 2000\n\n"
        last = await fingerprint()
        # A change between rendering the page (or the last stream ending) and now refreshes the list
        # once. Nothing else does: a refresh replaces the rows, and a tap on one that is being replaced
        # is lost.
        if seen is None or _token(last) != seen:
            yield "event: changed\ndata: inbox\n\n"
        yield LISTENING
        deadline = time.monotonic() + STREAM_SECONDS
        while time.monotonic() < deadline:
            await signals.wait_for_change(CHECK_SECONDS)
            now = await fingerprint()
            if now != last:
                last = now
                yield "event: changed\ndata: inbox\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


async def _fingerprint(session: AsyncSession, user: SignedIn) -> tuple[object, ...]:
    return await questions.inbox_fingerprint(session=session, viewer=user.viewer)


def _token(fingerprint: tuple[object, ...]) -> str:
    return hashlib.sha256(repr(fingerprint).encode()).hexdigest()[:32]
