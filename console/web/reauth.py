"""Confirming a sign-in again (step-up): the password once more, or a fresh login at the provider."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import Forbidden, Unauthorized
from console.identity.oidc import start_login
from console.identity.oidc_client import OidcError
from console.identity.sessions import (
    SignedIn,
    begin_reauthentication,
    reauthenticate,
    reauthentication_method,
)
from console.identity.throttle import TooManyAttempts
from console.transactions import commit, commit_if_kept
from console.web.auth import CsrfUser, WebUser, client_address, policy, safe_next
from console.web.deps import DbSession, RuntimeDep, SettingsDep, form_fields
from console.web.oidc import failure_page, provider_client, to_provider
from console.web.templating import render

router = APIRouter(include_in_schema=False)

PASSWORD_OFF = "Confirming with a password is turned off here; use single sign-on."  # noqa: S105  # a message


def _session_id(user: SignedIn) -> str:
    if user.viewer.web_session_id is None:
        raise Unauthorized("sign in first")
    return user.viewer.web_session_id


def _page(
    request: Request, user: SignedIn, next_path: str, error: str | None = None, status: int = 200
) -> Response:
    context = {"user": user, "next": next_path, "error": error}
    return render(request, "auth/reauth.html", context, status=status)


@router.get("/reauth")
async def reauth_page(
    request: Request, session: DbSession, user: WebUser, runtime: RuntimeDep, next: str = "/"
) -> Response:
    settings = runtime.settings
    web_session_id = _session_id(user)
    issuer = settings.oidc_issuer if settings.oidc_enabled else None
    method = await reauthentication_method(session=session, web_session_id=web_session_id, oidc_issuer=issuer)
    await commit(session)
    if method == "oidc":
        try:
            started = await start_login(
                session=session,
                client=provider_client(runtime),
                next_path=safe_next(next),
                client_address=client_address(request),
                web_session_id=web_session_id,
            )
        except OidcError as exc:
            await commit_if_kept(session, exc)
            return failure_page(request, exc)
        await commit(session)
        return to_provider(request, started)
    if not settings.local_sign_in:
        raise Forbidden(PASSWORD_OFF)
    return _page(request, user, safe_next(next))


@router.post("/reauth")
async def reauth(
    request: Request,
    session: DbSession,
    user: CsrfUser,
    settings: SettingsDep,
) -> Response:
    fields = await form_fields(request, password=1000, next=2000)
    password, next = fields.get("password", ""), fields.get("next", "/")
    if not settings.local_sign_in:
        raise Forbidden(PASSWORD_OFF)
    web_session_id, limits = _session_id(user), policy(request)
    try:
        attempt = await begin_reauthentication(session=session, web_session_id=web_session_id, policy=limits)
        await commit(session)  # counted by attempts sent after it before its password is checked
        await reauthenticate(
            session=session,
            attempt=attempt,
            web_session_id=web_session_id,
            password=password,
            client=client_address(request),
            policy=limits,
        )
    except TooManyAttempts as exc:
        await commit_if_kept(session, exc)
        page = _page(request, user, safe_next(next), exc.message, status=429)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except Unauthorized as exc:
        await commit_if_kept(session, exc)
        return _page(request, user, safe_next(next), exc.message, status=401)
    await commit(session)
    return RedirectResponse(safe_next(next), status_code=303)
