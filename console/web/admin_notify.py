"""A team's notifications on its admin pages: its chat and webhook channels (added, removed; a webhook's
secret shown once) and every delivery, with "send again" for a failed one."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import InvalidInput
from console.mcp.sealed import Outbound
from console.notify.admin import send_again, team_deliveries
from console.notify.channels import EVENTS, KINDS, add_channel, remove_channel, team_channels
from console.transactions import commit, rollback
from console.web.admin import team_url
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, RuntimeDep, SettingsDep, form_fields
from console.web.templating import render

router = APIRouter(include_in_schema=False)
PAGE = "/notifications"


async def _page(
    request: Request,
    session: DbSession,
    user: WebUser,
    team_name: str,
    *,
    extra: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    context = {
        "user": user,
        "team": team_name,
        "base": team_url(team_name),
        "deliveries": await team_deliveries(session=session, by=user.viewer, team_name=team_name),
        "channels": await team_channels(session=session, by=user.viewer, team_name=team_name),
        "kinds": KINDS,
        "events": EVENTS,
        "errors": {},
        "entered": {},
        **(extra or {}),
    }
    await commit(session)  # the request's unit of work, whatever it wrote before
    return render(request, "admin/notifications.html", context, status=status)


@router.get("/admin/teams/{team_name}/notifications")
async def notifications(team_name: str, request: Request, session: DbSession, user: WebUser) -> Response:
    return await _page(request, session, user, team_name)


@router.post("/admin/teams/{team_name}/channels")
async def add(
    team_name: str, request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep
) -> Response:
    fields = await form_fields(request, kind=20, url=2000)
    kind, url = fields.get("kind", ""), fields.get("url", "")
    # A webhook's ticked events (none ticked: all of them); a chat channel's are fixed.
    form = await request.form()
    ticked = [str(e)[:40] for e in form.getlist("events")][: len(EVENTS)]
    internal = form.get("internal") == "on"  # the service refuses it to anyone but a site admin
    try:
        added = await add_channel(
            session=session,
            cipher=Outbound.of(settings).cipher,
            by=user.viewer,
            team_name=team_name,
            kind=kind,
            url=url,
            events=ticked if kind == "webhook" else None,
            internal=internal,
        )
    except InvalidInput as refused:
        await rollback(session)
        entered = {"kind": kind, "url": url, "events": ticked, "internal": internal}
        extra = {"errors": refused.fields, "entered": entered}
        return await _page(request, session, user, team_name, extra=extra, status=422)
    return await _page(request, session, user, team_name, extra={"added": added})


@router.post("/admin/teams/{team_name}/channels/{channel_id}/remove")
async def remove(team_name: str, channel_id: str, session: DbSession, user: CsrfUser) -> Response:
    await remove_channel(session=session, by=user.viewer, team_name=team_name, channel_id=channel_id)
    await commit(session)
    return RedirectResponse(team_url(team_name, f"{PAGE}#channels"), status_code=303)


@router.post("/admin/teams/{team_name}/notifications/{delivery_id}/resend")
async def resend(
    team_name: str,
    delivery_id: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
    runtime: RuntimeDep,
) -> Response:
    await send_again(
        session=session,
        by=user.viewer,
        team_name=team_name,
        delivery_id=delivery_id,
        give_up_hours=runtime.settings.notify_give_up_hours,
    )
    await commit(session)
    runtime.signals.something_changed()  # the notifier looks again
    return RedirectResponse(team_url(team_name, f"{PAGE}#delivery-{delivery_id}"), status_code=303)
