"""Signing in and out of the web console."""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import Forbidden, Unauthorized
from console.identity.sessions import SignedIn, begin_sign_in, sign_in, sign_out
from console.identity.throttle import TooManyAttempts
from console.runtime import runtime_of
from console.transactions import commit, commit_if_kept
from console.web.auth import (
    LOGIN_CSRF_COOKIE,
    CsrfUser,
    check_origin,
    client_address,
    current_session,
    policy,
    safe_next,
    session_cookie_name,
    set_session_cookie,
)
from console.web.deps import DbSession, SettingsDep
from console.web.templating import render

router = APIRouter(include_in_schema=False)


def _login_page(
    request: Request, *, next_path: str, error: str | None = None, name: str | None = None, status: int = 200
) -> Response:
    token = request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(32)
    runtime = runtime_of(request.app)
    settings = runtime.settings
    context = {
        "user": None,
        "login_csrf": token,
        "next": next_path,
        "error": error,
        "name": name,
        "local_sign_in": settings.local_sign_in,
        "provider_name": settings.oidc_provider_name if settings.oidc_enabled else None,
        "demo": runtime.demo,
    }
    response = render(request, "auth/login.html", context, status=status)
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        max_age=3600,
        secure=str(settings.base_url).startswith("https://"),
    )
    return response


@router.get("/login")
async def login_form(
    request: Request, current: Annotated[SignedIn | None, Depends(current_session)], next: str = "/"
) -> Response:
    if current is not None:
        return RedirectResponse(safe_next(next), status_code=303)
    return _login_page(request, next_path=safe_next(next))


@router.post("/login")
async def login(
    request: Request,
    session: DbSession,
    name: Annotated[str, Form(max_length=100)],
    password: Annotated[str, Form(max_length=1000)],
    settings: SettingsDep,
    csrf_token: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    if not settings.local_sign_in:
        raise Forbidden("Signing in with a password is turned off here; use single sign-on.")
    check_origin(request)
    expected = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    if not expected or not hmac.compare_digest(expected.encode(), csrf_token.encode()):
        raise Forbidden("the sign-in form expired; reload the page")
    client, limits = client_address(request), policy(request)
    attempt = await begin_sign_in(session=session, name=name, client=client, policy=limits)
    await commit(session)  # counted by attempts sent after it before its password is checked
    try:
        signed = await sign_in(
            session=session, attempt=attempt, name=name, password=password, client=client, policy=limits
        )
    except TooManyAttempts as exc:
        await commit_if_kept(session, exc)
        page = _login_page(request, next_path=safe_next(next), error=exc.message, name=name, status=429)
        page.headers["Retry-After"] = str(exc.retry_after)
        return page
    except Unauthorized as exc:
        await commit_if_kept(session, exc)
        return _login_page(request, next_path=safe_next(next), error=exc.message, name=name, status=401)
    await commit(session)
    response = RedirectResponse(safe_next(next), status_code=303)
    set_session_cookie(request, response, signed.token)
    response.delete_cookie(LOGIN_CSRF_COOKIE)
    return response


@router.post("/logout")
async def logout(request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep) -> Response:
    await sign_out(session=session, token=user.token)
    await commit(session)
    response = RedirectResponse("/login", status_code=303)
    # Browsers drop a __Host- cookie deletion that lacks Secure, so it mirrors how the cookie was set.
    response.delete_cookie(
        session_cookie_name(request),
        path="/",
        httponly=True,
        samesite="lax",
        secure=str(settings.base_url).startswith("https://"),
    )
    return response
