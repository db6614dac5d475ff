"""Single sign-on through the OpenID provider: start at /login/oidc, come back to /login/oidc/callback."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response

from console.calls.questions.connected import connect_enterprise_waiting
from console.errors import NotFound
from console.identity.oidc import Callback, Started, finish_login, spend_state, start_login
from console.identity.oidc_client import CALLBACK_PATH, OidcClient, OidcError
from console.identity.sessions import SignedIn
from console.mcp.sealed import Outbound
from console.runtime import Runtime, runtime_of
from console.transactions import commit, commit_if_kept
from console.web.auth import client_address, current_session, safe_next, set_session_cookie
from console.web.deps import DbSession, RuntimeDep, SettingsDep
from console.web.oauth import accept_waiting
from console.web.templating import render

router = APIRouter(include_in_schema=False)

STATE_COOKIE = "console_oidc_state"
STATE_COOKIE_PATH = "/login/oidc"
STATE_COOKIE_SECONDS = 600
MAX_PARAM_LENGTH = 4096


def provider_client(runtime: Runtime) -> OidcClient:
    """The app's provider client.

    Raises:
        NotFound: single sign-on is not configured.
    """
    if runtime.oidc_client is None:
        raise NotFound("single sign-on is not configured")
    return runtime.oidc_client


async def oidc_client(runtime: RuntimeDep) -> OidcClient:
    return provider_client(runtime)


OidcDep = Annotated[OidcClient, Depends(oidc_client)]


def to_provider(request: Request, started: Started) -> Response:
    """Send the browser to the provider, binding the sign-in to this browser with a short-lived cookie."""
    response = RedirectResponse(started.url, status_code=303)
    response.set_cookie(
        STATE_COOKIE,
        started.state,
        max_age=STATE_COOKIE_SECONDS,
        path=STATE_COOKIE_PATH,
        httponly=True,
        samesite="lax",
        secure=_https(request),
    )
    return response


def failure_page(request: Request, exc: OidcError) -> Response:
    response = render(request, "auth/sign_in_failed.html", {"user": None, "message": exc.message}, status=400)
    _forget_state(request, response)
    return response


@router.get("/login/oidc")
async def start(request: Request, session: DbSession, client: OidcDep, next: str = "/") -> Response:
    try:
        started = await start_login(
            session=session, client=client, next_path=safe_next(next), client_address=client_address(request)
        )
    except OidcError as exc:
        await commit_if_kept(session, exc)
        return failure_page(request, exc)
    await commit(session)
    return to_provider(request, started)


@router.get(CALLBACK_PATH)
async def callback(
    request: Request,
    session: DbSession,
    client: OidcDep,
    current: Annotated[SignedIn | None, Depends(current_session)],
    settings: SettingsDep,
) -> Response:
    outbound = Outbound.of(settings)
    answer = Callback(*(_param(request, name) for name in ("state", "code", "iss", "error")))
    try:
        login = await spend_state(
            session=session,
            callback=answer,
            bound_state=request.cookies.get(STATE_COOKIE),
            client_address=client_address(request),
        )
        await commit(session)  # spent, whatever the provider answers
        finished = await finish_login(
            session=session,
            client=client,
            callback=answer,
            login=login,
            current_web_session_id=current.viewer.web_session_id if current else None,
            teams_claim=settings.oidc_teams_claim,
            client_address=client_address(request),
            cipher=outbound.cipher,
        )
    except OidcError as exc:
        await commit_if_kept(session, exc)
        return failure_page(request, exc)
    await commit(session)
    # With a fresh ID token, the calls waiting for the person's enterprise-managed connections go on, and
    # the person sees the first of them.
    viewer = finished.signed_in.viewer if finished.signed_in is not None else current and current.viewer
    waiting = (
        await connect_enterprise_waiting(session=session, outbound=outbound, viewer=viewer) if viewer else []
    )
    await commit(session)
    accepted = await accept_waiting(request, viewer, waiting) if viewer else []
    back = f"/elicitations/{accepted[0].elicitation.id}" if accepted else finished.next_path
    response = RedirectResponse(safe_next(back), status_code=303)
    if finished.signed_in is not None:
        set_session_cookie(request, response, finished.signed_in.token)
    _forget_state(request, response)
    return response


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value if value is not None and len(value) <= MAX_PARAM_LENGTH else None


def _forget_state(request: Request, response: Response) -> None:
    response.delete_cookie(
        STATE_COOKIE, path=STATE_COOKIE_PATH, httponly=True, samesite="lax", secure=_https(request)
    )


def _https(request: Request) -> bool:
    return str(runtime_of(request.app).settings.base_url).startswith("https://")
