"""People connect their own accounts at OAuth-protected MCP servers (MCP authorization): Connect sends the
browser to the authorization server, the callback stores the grant, Disconnect revokes it.

The attempt's `state` is bound to the person (their web session's user) and to their browser: a cookie
holds a key whose digest the attempt keeps, scoped to the callback path and sent back only there.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from console.calls.connects.deciding import kept_challenge, server_of
from console.calls.questions import inbox as questions
from console.calls.questions.connected import connects_waiting
from console.calls.questions.decisions import Decision
from console.calls.states import QuestionMode, QuestionStatus
from console.dispatch.taking import accept_connects
from console.errors import Conflict, InvalidInput, NotFound
from console.identity import Viewer
from console.identity.sessions import reauthentication_method
from console.identity.sso_assertions import current_assertion
from console.mcp.challenge import Challenge
from console.mcp.models import McpServer
from console.mcp.registry import per_user_servers
from console.mcp.sealed import Outbound
from console.oauth.clients import CALLBACK_PATH, METADATA_PATH, ClientSite, metadata_document
from console.oauth.enterprise import enterprise_client, enterprise_grant
from console.oauth.flow import ATTEMPT_MINUTES, Returned, begin, finish
from console.oauth.grants import disconnect
from console.oauth.http import Reach
from console.runtime import runtime_of
from console.transactions import commit, keep_writes
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, SettingsDep
from console.web.templating import render

router = APIRouter(include_in_schema=False)

BROWSER_COOKIE = "console_oauth"
MAX_QUERY_VALUE = 4096


@router.get(METADATA_PATH)
async def client_metadata(request: Request, settings: SettingsDep) -> Response:
    """The console's Client ID Metadata Document, where authorization servers fetch it."""
    document = metadata_document(ClientSite.of(settings))
    if document is None:
        raise NotFound("this console has no client metadata document (its base URL is not https)")
    return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})


async def _own_server(session: DbSession, user: WebUser | CsrfUser, server_id: str) -> McpServer:
    """One of the person's teams' servers that signs people in with OAuth."""
    servers = await per_user_servers(session=session, team_ids=list(user.viewer.roles))
    server = next((s for s in servers if s.id == server_id and s.credential_mode == "oauth"), None)
    if server is None:
        raise NotFound(f"no server {server_id!r} to connect")
    return server


@router.post("/connections/{server_id}/oauth")
async def connect(
    server_id: str, request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep
) -> Response:
    server = await _own_server(session, user, server_id)
    if enterprise_client(Outbound.of(settings), server) is not None:
        return await _through_single_sign_on(
            request, session, user, server, f"/connections#connection-{server.id}"
        )
    return await _to_authorization_server(request, session, user, server, None)


@router.post("/elicitations/{elicitation_id}/connect")
async def connect_for_call(
    elicitation_id: str, request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep
) -> Response:
    """Connect from the question a call waits on: the scopes its server's challenge asked for."""
    view = await questions.read_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id, attempt="connect"
    )
    question = view.elicitation
    if question.mode != QuestionMode.CONNECT:
        raise InvalidInput(
            "this question does not ask to connect an account", {"elicitation_id": "not a connect"}
        )
    if question.status != QuestionStatus.PENDING:
        raise Conflict(f"this question was already answered ({question.status})")
    server = await _own_server(session, user, await server_of(session, question))
    if enterprise_client(Outbound.of(settings), server) is not None:
        return await _through_single_sign_on(request, session, user, server, f"/elicitations/{question.id}")
    return await _to_authorization_server(request, session, user, server, kept_challenge(view.asked))


async def _through_single_sign_on(
    request: Request, session: DbSession, user: CsrfUser, server: McpServer, back: str
) -> Response:
    """An enterprise-managed server: the grant comes from the person's single sign-on, now if its ID token
    is current, else after they sign in again at the identity provider (whose callback connects)."""
    settings = runtime_of(request.app).settings
    outbound = Outbound.of(settings)
    viewer = user.viewer
    if outbound.sso is None:  # an enterprise-managed server is one only while single sign-on is set
        raise NotFound("single sign-on is not configured")
    kept = await current_assertion(
        session=session, cipher=outbound.cipher, user_id=viewer.user_id, issuer=outbound.sso.issuer
    )
    if kept is None:
        method = await reauthentication_method(
            session=session, web_session_id=viewer.web_session_id or "", oidc_issuer=settings.oidc_issuer
        )
        if method != "oidc":
            raise Conflict(
                f"connections to {server.name} come from single sign-on: sign out, then sign in through "
                f"{settings.oidc_provider_name}"
            )
        url = f"/reauth?next={quote(back, safe='/')}"
        context = {"url": url, "domain": urlsplit(settings.oidc_issuer).netloc, "comes_back": True}
        return render(request, "questions/leaving.html", context)
    if (
        await enterprise_grant(session=session, outbound=outbound, server=server, user_id=viewer.user_id)
        is None
    ):
        # The refusal's audit record stays: that is where the administrator finds the reason.
        raise keep_writes(
            session,
            Conflict(
                f"the identity provider or the authorization server of {server.name} refused the "
                "connection; an administrator finds the reason in the audit log"
            ),
        )
    waiting = await connects_waiting(session=session, viewer=viewer, server_id=server.id)
    await commit(session)
    accepted = await accept_waiting(request, viewer, waiting)
    target = f"/elicitations/{accepted[0].elicitation.id}" if accepted else back
    return RedirectResponse(target, status_code=303)


async def _to_authorization_server(
    request: Request, session: DbSession, user: CsrfUser, server: McpServer, challenge: Challenge | None
) -> Response:
    """Begin the authorization and send the browser on, through a page of our own: a form's post may
    not redirect to another site (the pages' form-action is 'self')."""
    settings = runtime_of(request.app).settings
    authorization = await begin(
        session=session,
        outbound=Outbound.of(settings),
        site=ClientSite.of(settings),
        server=server,
        user_id=user.viewer.user_id,
        challenge=challenge,
    )
    await commit(session)
    response = render(
        request,
        "questions/leaving.html",
        {"url": authorization.url, "domain": authorization.auth_host, "comes_back": True},
    )
    response.set_cookie(
        BROWSER_COOKIE,
        authorization.browser_key,
        httponly=True,
        samesite="lax",  # sent on the authorization server's top-level redirect back, not on its posts
        path=CALLBACK_PATH,
        max_age=ATTEMPT_MINUTES * 60,
        secure=str(settings.base_url).startswith("https://"),
    )
    return response


@router.get(CALLBACK_PATH)
async def callback(request: Request, session: DbSession, user: WebUser, settings: SettingsDep) -> Response:
    outbound = Outbound.of(settings)
    query = request.query_params
    returned = Returned(**{name: _one(query.get(name)) for name in ("state", "code", "iss", "error")})
    browser_key = request.cookies.get(BROWSER_COOKIE)
    connected = await finish(
        session=session,
        outbound=outbound,
        site=ClientSite.of(settings),
        user_id=user.viewer.user_id,
        browser_key=browser_key,
        returned=returned,
    )
    await commit(session)
    # The calls that waited for this connection go on, and the person sees the first of them.
    waiting = await connects_waiting(session=session, viewer=user.viewer, server_id=connected.server_id)
    await commit(session)
    accepted = await accept_waiting(request, user.viewer, waiting)
    back = f"/elicitations/{accepted[0].elicitation.id}" if accepted else None
    response = RedirectResponse(back or f"/connections#connection-{connected.server_id}", status_code=303)
    response.delete_cookie(BROWSER_COOKIE, path=CALLBACK_PATH)
    return response


@router.post("/connections/{server_id}/disconnect")
async def disconnect_server(
    server_id: str, request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep
) -> Response:
    server = await _own_server(session, user, server_id)
    outbound = Outbound.of(settings)
    await disconnect(
        session=session,
        cipher=outbound.cipher,
        reach=Reach.of(server, outbound),
        actor=user.viewer.actor,
        server=server,
        user_id=user.viewer.user_id,
    )
    await commit(session)
    return RedirectResponse(f"/connections#connection-{server.id}", status_code=303)


async def accept_waiting(request: Request, viewer: Viewer, question_ids: list[str]) -> list[Decision]:
    """Accept the connect questions the person's connection answers; their calls go on."""
    runtime = runtime_of(request.app)
    return await accept_connects(
        factory=runtime.factory,
        signals=runtime.signals,
        dispatcher=runtime.dispatcher,
        viewer=viewer,
        question_ids=question_ids,
    )


def _one(value: str | None) -> str | None:
    return value if value is not None and len(value) <= MAX_QUERY_VALUE else None
