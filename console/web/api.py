"""The agent API (`/api/v1`): runs, calls, questions, servers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Query, Request, Response, Security
from sqlalchemy.exc import IntegrityError

from console.calls import service as calls
from console.calls.objects import CallOut
from console.calls.questions import decisions
from console.calls.questions import inbox as questions
from console.calls.states import CallStatus
from console.dispatch import follow
from console.dispatch.taking import resume_after_commit
from console.errors import Conflict
from console.identity.idempotency import HEADER, Keyed, created_before, keyed
from console.mcp.admin import pin_protocol
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for, list_servers, public_address, server_by_name
from console.mcp.sealed import Outbound
from console.runtime import runtime_of
from console.transactions import after_commit, commit, rollback
from console.web.deps import (
    API_TOKEN,
    DbSession,
    PrincipalDep,
    RuntimeDep,
    SettingsDep,
    json_body,
    read_body,
    read_model,
)
from console.web.schemas import (
    AnswerIn,
    CallIn,
    QuestionOut,
    QuestionPage,
    RunIn,
    RunOut,
    ServerOut,
    ServerPinIn,
    ToolOut,
)

# The token is checked by `get_principal`; API_TOKEN declares it, so /api/docs can send one.
router = APIRouter(prefix="/api/v1", tags=["agent API"], dependencies=[Security(API_TOKEN)])

WaitSeconds = Annotated[float, Query(ge=0, le=60, description="block up to this many seconds for progress")]


IDEMPOTENT = {
    "parameters": [
        {
            "name": HEADER,
            "in": "header",
            "required": False,
            "schema": {"type": "string", "maxLength": 255},
            "description": "a key of your choosing: a retry with the same key and body gets the first "
            "request's result instead of doing it again (422 with another body; kept 24 hours)",
        }
    ]
}


async def _key_of(request: Request, principal: PrincipalDep) -> Keyed | None:
    """The request's idempotency key (read after the token was checked; the body is already capped)."""
    header = request.headers.get(HEADER)
    # The team is part of the request: a person's key from one team's token never replays another's.
    what = f"{principal.team_id} {request.url.path}"
    return keyed(principal.user_id, header, request.method, what, await request.body())


async def _once(
    session: DbSession, key: Keyed | None, kind: str, create: Callable[[], Awaitable[str]]
) -> tuple[str, bool]:
    """What the request creates (its id, True), or what an earlier request with its key created (False)."""
    if key is not None and (earlier := await created_before(session, key, kind)) is not None:
        return earlier, False
    try:
        return await create(), True
    # The same key in a request at the same time, which got there first: its key collides, or (an answer)
    # it decided the question this one then found decided.
    except (IntegrityError, Conflict):
        await rollback(session)
        if key is None or (earlier := await created_before(session, key, kind)) is None:
            raise
        return earlier, False


@router.post(
    "/runs",
    summary="Start a run",
    status_code=201,
    response_model=RunOut,
    openapi_extra=json_body(RunIn) | IDEMPOTENT,
)
async def create_run(request: Request, session: DbSession, principal: PrincipalDep) -> RunOut:
    """A run groups one agent's calls for one task; the token's user owns it."""
    body = await read_model(request, RunIn, "run")
    key = await _key_of(request, principal)

    async def create() -> str:
        run = await calls.create_run(
            session=session,
            principal=principal,
            team=body.team,
            title=body.title,
            agent=body.agent,
            idempotency=key,
        )
        await commit(session)
        return run.id

    run_id, _ = await _once(session, key, "run", create)
    run = await calls.run_of(session=session, principal=principal, run_id=run_id)
    return RunOut.of(run, team=principal.team_name, owner=principal.user_name)


@router.post(
    "/runs/{run_id}/calls",
    summary="Call a server's tool, prompt or resource",
    response_model=CallOut,
    responses={202: {"model": CallOut, "description": "the call waits for input (or is still running)"}},
    openapi_extra=json_body(CallIn) | IDEMPOTENT,
)
async def start_call(
    run_id: str,
    request: Request,
    response: Response,
    session: DbSession,
    principal: PrincipalDep,
    settings: SettingsDep,
    runtime: RuntimeDep,
    wait: WaitSeconds = 0,
) -> CallOut:
    """Records the call and sends it, then waits up to `wait` seconds: 200 when it finished; 202 while it
    runs or waits for people, with the questions it waits on in `pending`."""
    answer_by = anyio.current_time() + wait  # whatever the server does: a server slow to connect, too
    body = await read_body(request)
    key = await _key_of(request, principal)
    markers: list[anyio.Event] = []

    async def create() -> str:
        started = await follow.start_and_hand_over(
            session=session,
            principal=principal,
            settings=settings,
            pool=runtime.pool,
            signals=runtime.signals,
            dispatcher=runtime.dispatcher,
            run_id=run_id,
            body_text=body,
            idempotency=key,
            tools_within=max(answer_by - anyio.current_time(), 0),
        )
        markers.append(started.marker)
        return started.call_id

    call_id, _ = await _once(session, key, "call", create)
    return await _call_response(
        request,
        response,
        session,
        principal,
        call_id,
        max(answer_by - anyio.current_time(), 0),
        settled=follow.left_running,
        unsettled_since=markers[0] if markers else None,
    )


@router.get(
    "/calls/{call_id}",
    summary="Look at a call",
    response_model=CallOut,
    responses={202: {"model": CallOut, "description": "not finished yet"}},
)
async def get_call(
    call_id: str,
    request: Request,
    response: Response,
    session: DbSession,
    principal: PrincipalDep,
    runtime: RuntimeDep,
    wait: WaitSeconds = 0,
    after_round: Annotated[
        int | None,
        Query(
            ge=0,
            description="the round you last saw: return once the call is past it (asks a later "
            "round, or finished); without it, return on any change from now",
        ),
    ] = None,
) -> CallOut:
    """200 once the call finished, else 202; with `wait`, blocks until it changes (with `after_round`:
    until it finished or asks a later round)."""
    seen = await follow.look(
        session=session, viewer=principal.viewer, signals=runtime.signals, call_id=call_id
    )
    start = (seen.view.call.status, seen.view.call.round)

    def settled(status: str, round_: int) -> bool:
        if calls.is_terminal(status):
            return True
        if after_round is not None:
            return status == CallStatus.AWAITING_INPUT and round_ > after_round
        return status == CallStatus.AWAITING_INPUT and (status, round_) != start

    return await _call_response(
        request, response, session, principal, call_id, wait, settled=settled, seen=seen
    )


@router.post("/calls/{call_id}/abandon", summary="Abandon a call", response_model=CallOut)
async def abandon_call(
    call_id: str, request: Request, session: DbSession, principal: PrincipalDep, settings: SettingsDep
) -> CallOut:
    """Stops a call that waits for people, was interrupted, or runs as a task: its open questions are
    withdrawn and nothing more is sent."""
    await calls.abandon_call(session=session, viewer=principal.viewer, call_id=call_id)
    await commit(session)
    view = await calls.view_call(session=session, viewer=principal.viewer, call_id=call_id)
    return CallOut.of(view.call, server=view.server, pending=view.pending, base_url=settings.base_url)


@router.post("/calls/{call_id}/resend", summary="Send an interrupted call again", response_model=CallOut)
async def resend_call(
    call_id: str, request: Request, session: DbSession, principal: PrincipalDep, runtime: RuntimeDep
) -> CallOut:
    """Sends again the request whose outcome was lost when a console process died; a request people
    approved goes only with its first approval, until that expires."""
    await calls.resend_interrupted(session=session, viewer=principal.viewer, call_id=call_id)
    after_commit(session, runtime.signals.work_available)
    await commit(session)
    view = await calls.view_call(session=session, viewer=principal.viewer, call_id=call_id)
    return CallOut.of(view.call, server=view.server, pending=view.pending, base_url=runtime.settings.base_url)


async def _call_response(
    request: Request,
    response: Response,
    session: DbSession,
    principal: PrincipalDep,
    call_id: str,
    wait: float,
    *,
    settled: Callable[[str, int], bool],
    unsettled_since: anyio.Event | None = None,
    seen: follow.Seen | None = None,
) -> CallOut:
    """The call once `settled` holds or `wait` runs out (200 when finished, else 202)."""
    runtime = runtime_of(request.app)
    view = await follow.follow_call(
        session=session,
        viewer=principal.viewer,
        signals=runtime.signals,
        call_id=call_id,
        wait=wait,
        settled=settled,
        unsettled_since=unsettled_since,
        seen=seen,
    )
    response.status_code = 200 if calls.is_terminal(view.call.status) else 202
    return CallOut.of(
        view.call,
        server=view.server,
        pending=view.pending,
        base_url=runtime.settings.base_url,
    )


@router.get("/elicitations", summary="List questions", response_model=QuestionPage)
async def list_elicitations(
    request: Request,
    session: DbSession,
    principal: PrincipalDep,
    settings: SettingsDep,
    status: Annotated[
        str, Query(pattern="^(pending|accepted|declined|cancelled|expired|superseded|interrupted)$")
    ] = "pending",
    before: str | None = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> QuestionPage:
    """The questions the token's user may see, newest first, of one status; page with `before`."""
    views = await questions.list_questions(
        session=session, viewer=principal.viewer, status=status, before=before, limit=limit
    )
    base = settings.base_url
    items = [QuestionOut.of(v, base_url=base) for v in views]
    return QuestionPage(items=items, next_before=items[-1].id if len(items) == limit else None)


@router.get("/elicitations/{elicitation_id}", summary="Look at a question", response_model=QuestionOut)
async def get_elicitation(
    elicitation_id: str, request: Request, session: DbSession, principal: PrincipalDep, settings: SettingsDep
) -> QuestionOut:
    """One question with its form (or link), its policy and the answers given so far."""
    view = await questions.read_question(
        session=session, viewer=principal.viewer, elicitation_id=elicitation_id
    )
    return QuestionOut.of(view, base_url=settings.base_url)


@router.post(
    "/elicitations/{elicitation_id}/answer",
    summary="Answer a question",
    response_model=QuestionOut,
    openapi_extra=json_body(AnswerIn) | IDEMPOTENT,
)
async def answer_elicitation(
    elicitation_id: str, request: Request, session: DbSession, principal: PrincipalDep, runtime: RuntimeDep
) -> QuestionOut:
    """Accept (with content that fits the form), decline or cancel; the call resumes once the policy's
    approvals are in."""
    body = await read_model(request, AnswerIn, "answer")
    key = await _key_of(request, principal)

    async def create() -> str:
        decision = await decisions.answer(
            session=session,
            viewer=principal.viewer,
            elicitation_id=elicitation_id,
            action=body.action,
            content=body.content,
            digest=body.digest,
            signed_digest=body.content_digest,
            reason=body.reason,
            idempotency=key,
        )
        await resume_after_commit(
            session=session, signals=runtime.signals, dispatcher=runtime.dispatcher, decision=decision
        )
        await commit(session)
        return elicitation_id

    await _once(session, key, "question", create)
    view = await questions.look_at_question(
        session=session, viewer=principal.viewer, elicitation_id=elicitation_id
    )
    return QuestionOut.of(view, base_url=runtime.settings.base_url)


@router.get("/servers", summary="List the team's MCP servers", response_model=list[ServerOut])
async def servers(session: DbSession, principal: PrincipalDep) -> list[ServerOut]:
    """Each enabled server's name, transport, address and protocol version (never a stdio command line)."""
    rows = await list_servers(session=session, team_id=principal.team_id)
    return [_server_out(s) for s in rows if not s.disabled]


@router.patch(
    "/servers/{name}",
    summary="Pin a server's protocol version",
    response_model=ServerOut,
    openapi_extra=json_body(ServerPinIn),
)
async def pin_server_protocol(
    name: str, request: Request, session: DbSession, principal: PrincipalDep
) -> ServerOut:
    """Team admins: pin the MCP version the console speaks to the server, or unpin it (null)."""
    body = await read_model(request, ServerPinIn, "server settings")
    server = await pin_protocol(
        session=session,
        by=principal.viewer,
        team_name=principal.team_name,
        name=name,
        version=body.protocol_version,
    )
    await commit(session)
    return _server_out(server)


def _server_out(server: McpServer) -> ServerOut:
    return ServerOut(
        name=server.name,
        transport=server.transport,  # type: ignore[arg-type]  # stored as stdio|http
        where=public_address(server),
        protocol=server.protocol_version or "unknown",
        pinned_protocol=server.pinned_protocol,  # type: ignore[arg-type]  # stored as one of PROTOCOL_PINS
    )


@router.get("/servers/{name}/tools", summary="List a server's tools", response_model=list[ToolOut])
async def server_tools(
    name: str, request: Request, session: DbSession, principal: PrincipalDep, runtime: RuntimeDep
) -> list[ToolOut]:
    """The server's tools as it lists them."""
    server = await server_by_name(session=session, team_id=principal.team_id, name=name)
    await commit(session)  # asking the server may start it: hold no transaction meanwhile
    endpoint = endpoint_for(server, Outbound.of(runtime.settings))
    tools = await runtime.pool.list_tools(endpoint)
    return [ToolOut.model_validate(t) for t in tools]


__all__ = ["router"]
