"""Each person's own notification settings: where email goes (their account's address) and whether it does."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.identity.emails import email_choice, set_email_notifications
from console.transactions import commit
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, SettingsDep, form_fields
from console.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/notifications")
async def settings_page(
    request: Request, session: DbSession, user: WebUser, settings: SettingsDep
) -> Response:
    choice = await email_choice(session=session, user_id=user.viewer.user_id)
    mail_on = settings.smtp_url is not None
    return render(request, "notifications/index.html", {"user": user, "choice": choice, "mail_on": mail_on})


@router.post("/notifications")
async def save(request: Request, session: DbSession, user: CsrfUser) -> Response:
    fields = await form_fields(request, email=3)
    await set_email_notifications(
        session=session, actor=user.viewer.actor, user_id=user.viewer.user_id, on=fields.get("email") == "on"
    )
    await commit(session)
    return RedirectResponse("/notifications", status_code=303)
