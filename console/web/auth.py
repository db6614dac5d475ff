"""Browser sign-in for the web pages: the session cookie, the sign-in redirect and CSRF checks."""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Annotated
from urllib.parse import quote, urlsplit

from fastapi import Depends, Request
from fastapi.responses import RedirectResponse, Response

from console.audit import record_event
from console.errors import Forbidden
from console.identity.sessions import SessionPolicy, SignedIn, resolve
from console.runtime import runtime_of
from console.transactions import commit, transaction
from console.web.deps import DbSession
from console.web.htmx import is_htmx

CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
LOGIN_CSRF_COOKIE = "console_login_csrf"


class SignInRequired(Exception):
    """Raised by page dependencies; answered with a redirect to the sign-in page."""


def session_cookie_name(request: Request) -> str:
    return "__Host-console_session" if _https(request) else "console_session"


def _https(request: Request) -> bool:
    return str(runtime_of(request.app).settings.base_url).startswith("https://")


def policy(request: Request) -> SessionPolicy:
    settings = runtime_of(request.app).settings
    return SessionPolicy(
        idle=timedelta(minutes=settings.session_idle_minutes),
        absolute=timedelta(hours=settings.session_absolute_hours),
    )


async def current_session(request: Request, session: DbSession) -> SignedIn | None:
    token = request.cookies.get(session_cookie_name(request))
    if not token:
        return None
    signed = await resolve(session=session, token=token, policy=policy(request))
    await commit(session)  # a unit of its own: the route's writes may be refused (CSRF) or never come
    return signed


async def signed_in(
    request: Request, current: Annotated[SignedIn | None, Depends(current_session)]
) -> SignedIn:
    if current is None:
        raise SignInRequired
    return current


def check_origin(request: Request) -> None:
    """Refuse cross-site requests: a present Origin must be ours, and Sec-Fetch-Site same-origin.

    Raises:
        Forbidden.
    """
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise Forbidden("cross-site request refused")
    origin = request.headers.get("origin")
    # With Referrer-Policy: no-referrer, browsers send "Origin: null" even on same-origin form posts;
    # Sec-Fetch-Site and the CSRF token still decide those.
    if origin is None or origin == "null":
        return
    ours = {_origin(str(request.base_url)), _origin(str(runtime_of(request.app).settings.base_url))}
    if origin not in ours:
        raise Forbidden("cross-origin request refused")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def csrf_protected(request: Request, user: Annotated[SignedIn, Depends(signed_in)]) -> SignedIn:
    """A signed-in user whose state-changing request carries the session's CSRF token.

    Raises:
        Forbidden: wrong or missing token, or a cross-site request.
    """
    try:
        check_origin(request)
    except Forbidden as exc:
        await _record_csrf_failure(request, user, exc.message)
        raise
    sent = request.headers.get(CSRF_HEADER)
    if sent is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not sent or not hmac.compare_digest(sent.encode(), user.csrf_token.encode()):
        await _record_csrf_failure(request, user, "missing token" if not sent else "wrong token")
        raise Forbidden("the form expired or came from elsewhere (CSRF check failed); reload the page")
    return user


async def _record_csrf_failure(request: Request, user: SignedIn, reason: str) -> None:
    """An audit event of its own (the refused request changes nothing); never the token sent."""
    async with transaction(runtime_of(request.app).factory) as session:
        record_event(
            session=session,
            actor=user.viewer.actor,
            action="csrf_failed",
            subject_type="user",
            subject_id=user.viewer.user_id,
            payload={"method": request.method, "path": request.url.path[:300], "reason": reason},
        )


def sign_in_redirect(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    location = f"/login?next={quote(target, safe='')}"
    if is_htmx(request):
        return Response(status_code=401, headers={"HX-Redirect": location})
    return RedirectResponse(location, status_code=303)


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        session_cookie_name(request), token, httponly=True, samesite="lax", path="/", secure=_https(request)
    )


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def safe_next(value: str | None) -> str:
    """Only local paths: never redirect sign-in to another site."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


WebUser = Annotated[SignedIn, Depends(signed_in)]
CsrfUser = Annotated[SignedIn, Depends(csrf_protected)]
