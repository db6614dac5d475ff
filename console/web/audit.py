"""The audit page: search the chained log, see one decision as its approver saw it, download what is shown."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from console.audit.actions import ACTIONS, reviewable
from console.audit.signing import signer_from
from console.errors import InvalidInput
from console.reports.audit_review import Criteria, event_detail, export_for, review
from console.transactions import commit
from console.web.auth import WebUser
from console.web.deps import DbSession, SettingsDep
from console.web.templating import render

router = APIRouter(include_in_schema=False)
PAGE_SIZE = 30  # a page of cards on a phone stays a few screens long
MAX_SEQ = 2**63 - 1  # the largest BIGINT: a larger cursor would be the database's error, not the reader's


def _moment(name: str, text: str) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(
            f"the {name} field is not a date or time: {text[:40]!r}", fields={name: "not a date or time"}
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def _criteria(request: Request) -> Criteria:
    q = request.query_params
    text = {
        name: q.get(name, "").strip()[:200]
        for name in ("team", "user", "server", "tool", "action", "outcome")
    }
    return Criteria(
        **text,
        since=_moment("since", q.get("since", "")),
        until=_moment("until", q.get("until", "")),
        call=q.get("call", "")[:64],
    )


@router.get("/audit")
async def audit_page(
    request: Request,
    session: DbSession,
    user: WebUser,
    settings: SettingsDep,
    before: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> Response:
    if before is not None and after is not None:
        raise InvalidInput("give either before or after, not both", fields={"after": "not with before"})
    criteria = _criteria(request)
    found = await review(
        session=session,
        viewer=user.viewer,
        criteria=criteria,
        before=before,
        after=after,
        limit=PAGE_SIZE,
        signer=signer_from(settings),
    )
    await commit(session)  # how far the chain was verified
    query = {k: v for k, v in request.query_params.items() if k not in ("before", "after") and v}
    actions = reviewable(site_admin=user.viewer.site_admin)
    context = {"user": user, "p": found, "c": criteria, "query": query, "actions": actions, "known": ACTIONS}
    return render(request, "audit/index.html", context)


@router.get("/audit/events/{seq}")
async def audit_event(seq: int, request: Request, session: DbSession, user: WebUser) -> Response:
    event, view = await event_detail(session=session, viewer=user.viewer, seq=seq)
    context = {"user": user, "e": event, "v": view, "about": ACTIONS.get(event.action)}
    return render(request, "audit/detail.html", context)


@router.get("/audit/export")
async def audit_export(
    request: Request,
    session: DbSession,
    user: WebUser,
    settings: SettingsDep,
    format: Annotated[Literal["jsonl", "csv"], Query()] = "jsonl",
) -> Response:
    data = await export_for(
        session=session,
        viewer=user.viewer,
        criteria=_criteria(request),
        fmt=format,
        signer=signer_from(settings),
    )
    await commit(session)  # the record of the download, before it is handed over
    media = "application/x-ndjson" if format == "jsonl" else "text/csv; charset=utf-8"
    disposition = f'attachment; filename="audit.{format}"'
    return Response(data, media_type=media, headers={"Content-Disposition": disposition})
