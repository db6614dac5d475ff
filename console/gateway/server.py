"""The MCP server agents talk to, on the SDK's own server side (both protocol generations).

Each request is authenticated by `auth.py` before it reaches the SDK; the handlers read the caller and
the path's server from the HTTP request, list what the caller may reach and forward every tool call,
prompt and resource read as a console call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import mcp.types as types
from mcp import MCPError
from mcp.server import Server
from mcp.server.caching import CacheableMethod, CacheHint

from console import __version__
from console.calls.access import refuse_read_only
from console.calls.service import view_call
from console.errors import ConsoleError, McpError
from console.gateway import context, forwarding, input_responses, rounds, tasks
from console.gateway.agent_roots import AgentRootsKeeper
from console.gateway.catalog import Catalog, build_catalog, upstreams
from console.gateway.context import Context
from console.gateway.driven import driving
from console.gateway.forwarding import AWAIT_TOOL
from console.gateway.listen import serve_listen
from console.gateway.memo import Memo
from console.gateway.withdrawing import withdraw_on_failure
from console.mcp.connection import Listing
from console.outage import unavailable
from console.transactions import transaction

AWAIT_TOOL_ITEM = {
    "name": AWAIT_TOOL,
    "title": "Wait for a console call",
    "description": (
        "Wait again for a call that still waits for a person's decision (a tool result said so and named "
        "its call id); returns the call's result once it is decided, or says that it still waits."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {"call_id": {"type": "string", "description": "the console call id the result named"}},
        "required": ["call_id"],
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}
# Listings are each caller's own (their team's servers, their credentials) and change with admins' edits.
LISTING_HINT = CacheHint(ttl_ms=10_000, scope="private")
TASK_AFTER_SECONDS = 2.0  # a call that neither ends nor asks anyone by then becomes a task too
LISTINGS: tuple[CacheableMethod, ...] = (
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
)
P = TypeVar("P")
R = TypeVar("R")


def build_server(memo: Memo, roots: AgentRootsKeeper) -> Server[Any]:
    server: Server[Any] = Server(
        "approval-console",
        version=__version__,
        instructions=(
            "Every call goes through the approval console: when a person must decide, the call waits "
            "for them, and a result may say that it still waits and how to wait again."
        ),
        cache_hints=dict.fromkeys(LISTINGS, LISTING_HINT),
        get_tool_input_schema=memo.input_schema,
    )
    handlers: list[tuple[str, Any, Callable[[Context, Any], Awaitable[Any]]]] = [
        ("tools/list", types.PaginatedRequestParams, _list_tools),
        ("tools/call", types.CallToolRequestParams, _call_tool),
        ("prompts/list", types.PaginatedRequestParams, _list_prompts),
        ("prompts/get", types.GetPromptRequestParams, _get_prompt),
        ("resources/list", types.PaginatedRequestParams, _list_resources),
        ("resources/templates/list", types.PaginatedRequestParams, _list_templates),
        ("resources/read", types.ReadResourceRequestParams, _read_resource),
        ("completion/complete", types.CompleteRequestParams, _complete_argument),
        ("resources/subscribe", types.SubscribeRequestParams, _subscribe),
        ("resources/unsubscribe", types.UnsubscribeRequestParams, _unsubscribe),
        ("subscriptions/listen", types.SubscriptionsListenRequestParams, _listen),
        # Registered directly: the SDK's keyword for it warns that logging is deprecated as of 2026-07-28,
        # where the method is gone (the SDK answers it as unknown there).
        ("logging/setLevel", types.SetLevelRequestParams, _set_log_level),
        ("tasks/get", tasks.TaskParams, tasks.get_task),
        ("tasks/update", tasks.TaskParams, tasks.update_task),
        ("tasks/cancel", tasks.TaskParams, tasks.cancel_task),
    ]
    server.extensions[tasks.TASKS] = {}
    server.middleware.extend([withdraw_on_failure, input_responses.take_aside])
    for method, params, handler in handlers:
        server.add_request_handler(method, params, _outage_answered(handler))

    async def roots_changed(ctx: Context, params: types.NotificationParams) -> None:
        roots.roots_changed(ctx)

    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, roots_changed
    )
    return server


def _outage_answered(handler: Callable[[Context, P], Awaitable[R]]) -> Callable[[Context, P], Awaitable[R]]:
    """The handler, with a database that cannot serve now answered as a JSON-RPC error that says so and
    when to try again (the SDK would send the driver's own text)."""

    async def answered(ctx: Context, params: P) -> R:
        try:
            return await handler(ctx, params)
        except Exception as exc:
            outage = unavailable(exc)
            if outage is None:
                raise
            data = {"retryAfterSeconds": outage.retry_after}
            raise MCPError(types.INTERNAL_ERROR, outage.message, data) from None

    return answered


async def _list_tools(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
    catalog = await _catalog(ctx, "tools")
    return _complete({"tools": [*catalog.shown("tools"), AWAIT_TOOL_ITEM]})


async def _list_prompts(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
    return _complete({"prompts": (await _catalog(ctx, "prompts")).shown("prompts")})


async def _list_resources(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
    return _complete({"resources": (await _catalog(ctx, "resources")).shown("resources")})


async def _list_templates(ctx: Context, params: types.PaginatedRequestParams) -> dict[str, Any]:
    templates = (await _catalog(ctx, "resourceTemplates")).shown("resourceTemplates")
    return _complete({"resourceTemplates": templates})


async def _call_tool(ctx: Context, params: types.CallToolRequestParams) -> dict[str, Any]:
    base_url = context.services(ctx).settings.base_url
    if params.name == AWAIT_TOOL:
        awaited = await _await(ctx, params.arguments or {})
        if awaited.ended and awaited.view.call.method != "tools/call":  # a prompt or resource, as text
            text = json.dumps(forwarding.method_result(awaited, base_url), ensure_ascii=False)
            return _complete({"content": [{"type": "text", "text": text}]})
        return _complete(forwarding.tool_result(awaited, base_url))
    early: dict[str, Any] = {}
    if params.request_state is not None:
        outcome = await _retried(ctx, "tools/call", params.request_state, input_responses.given())
    else:
        early = input_responses.answers_in(input_responses.given())  # refused before anything runs
        entry = (await _catalog(ctx, "tools")).tools.get(params.name)
        if entry is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        forwarded = {"name": entry.upstream_name, "arguments": params.arguments or {}}
        if tasks.answers_with_tasks(ctx):
            outcome = await _forwarded(ctx, entry.upstream.name, "tools/call", forwarded, as_task=True)
            if not outcome.ended:
                return tasks.created(outcome, base_url)
            return _complete(forwarding.tool_result(outcome, base_url))
        outcome = await _forwarded(ctx, entry.upstream.name, "tools/call", forwarded)
    outcome, handed = await _handed_over(ctx, "tools/call", outcome, early)
    return handed or _complete(forwarding.tool_result(outcome, base_url))


async def _get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> dict[str, Any]:
    early: dict[str, Any] = {}
    if params.request_state is not None:
        outcome = await _retried(ctx, "prompts/get", params.request_state, input_responses.given())
    else:
        early = input_responses.answers_in(input_responses.given())
        entry = (await _catalog(ctx, "prompts")).prompts.get(params.name)
        if entry is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}")
        forwarded = {"name": entry.upstream_name, "arguments": params.arguments or {}}
        outcome = await _forwarded(ctx, entry.upstream.name, "prompts/get", forwarded)
    base_url = context.services(ctx).settings.base_url
    outcome, handed = await _handed_over(ctx, "prompts/get", outcome, early)
    return handed or _complete(forwarding.method_result(outcome, base_url))


async def _read_resource(ctx: Context, params: types.ReadResourceRequestParams) -> dict[str, Any]:
    early: dict[str, Any] = {}
    if params.request_state is not None:
        outcome = await _retried(ctx, "resources/read", params.request_state, input_responses.given())
    else:
        early = input_responses.answers_in(input_responses.given())
        uri = str(params.uri)
        catalog = await _catalog(ctx, "resources", "resourceTemplates")
        upstream = catalog.server_of_uri(uri)
        if upstream is None:
            raise MCPError(types.INVALID_PARAMS, catalog.unrouted(uri), {"uri": uri})
        outcome = await _forwarded(ctx, upstream.name, "resources/read", {"uri": uri})
    base_url = context.services(ctx).settings.base_url
    outcome, handed = await _handed_over(ctx, "resources/read", outcome, early)
    return handed or _complete(forwarding.method_result(outcome, base_url))


async def _subscribe(ctx: Context, params: types.SubscribeRequestParams) -> dict[str, Any]:
    """A 2025-11-25 session's subscription to a resource, heard from the server that lists it (directly:
    hearing of a change has no effects, so it is no console call; reading the resource again is)."""
    uri = str(params.uri)
    catalog = await _catalog(ctx, "resources", "resourceTemplates")
    upstream = catalog.server_of_uri(uri)
    if upstream is None:
        raise MCPError(types.INVALID_PARAMS, catalog.unrouted(uri), {"uri": uri})
    if not await context.subscriptions(ctx).subscribe(upstream, uri):
        message = f"{upstream.name} does not tell of changes to {uri!r}"
        raise MCPError(types.INVALID_PARAMS, message, {"uri": uri})
    return {}


async def _unsubscribe(ctx: Context, params: types.UnsubscribeRequestParams) -> dict[str, Any]:
    await context.subscriptions(ctx).unsubscribe(str(params.uri))
    return {}


async def _listen(ctx: Context, params: types.SubscriptionsListenRequestParams) -> dict[str, Any]:
    return await serve_listen(ctx, params, await _catalog(ctx, "resources", "resourceTemplates"))


async def _set_log_level(ctx: Context, params: types.SetLevelRequestParams) -> dict[str, Any]:
    """A 2025-11-25 session's level for the servers' log notifications of its later requests (the
    servers are not told: each request relays only what its own session asked for)."""
    key = context.session_key(ctx)
    if key is None:
        raise MCPError(types.INVALID_REQUEST, "logging/setLevel needs a session (MCP 2025-11-25)")
    context.services(ctx).memo.log_levels.put(key, params.level)
    return {}


async def _complete_argument(ctx: Context, params: types.CompleteRequestParams) -> dict[str, Any]:
    """Completions for a prompt's or resource template's argument, asked of the server that listed it
    (directly, as no console call: completing what a person types has no effects). The server still
    runs what it is asked, so a read-only caller is refused (and recorded) as for a call."""
    await _refuse_read_only(ctx, "completion/complete")
    if isinstance(params.ref, types.PromptReference):
        entry = (await _catalog(ctx, "prompts")).prompts.get(params.ref.name)
        if entry is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.ref.name!r}")
        upstream = entry.upstream
        ref: types.PromptReference | types.ResourceTemplateReference = params.ref.model_copy(
            update={"name": entry.upstream_name}
        )
    else:
        catalog = await _catalog(ctx, "resources", "resourceTemplates")
        found = catalog.server_of_uri(params.ref.uri)
        if found is None:
            raise MCPError(types.INVALID_PARAMS, catalog.unrouted(params.ref.uri))
        upstream, ref = found, params.ref
    try:
        result = await context.services(ctx).pool.complete(
            upstream.endpoint, params.model_copy(update={"ref": ref, "meta": None})
        )
    except McpError as exc:
        raise MCPError(exc.rpc_code or types.INTERNAL_ERROR, exc.message, exc.data) from None
    return _complete(forwarding.as_ours(result))


async def _refuse_read_only(ctx: Context, attempt: str) -> None:
    services, principal = context.services(ctx), context.caller(ctx)
    if not principal.viewer.read_only_in(principal.team_id):
        return
    try:
        async with transaction(services.factory) as session:
            await refuse_read_only(
                session=session,
                viewer=principal.viewer,
                team_id=principal.team_id,
                attempt=attempt,
                subject_type="team",
                subject_id=principal.team_id,
            )
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None


async def _forwarded(
    ctx: Context, server: str, method: str, params: dict[str, Any], *, as_task: bool = False
) -> forwarding.Outcome:
    """The request as a console call, held while people decide; `as_task`: only until it waits for
    anyone (or `TASK_AFTER_SECONDS`), since the agent then follows it as a task."""
    services, principal = context.services(ctx), context.caller(ctx)
    gateway_session = await context.shared(ctx).session_of_call(ctx)

    async def held(stop: forwarding.Stop) -> forwarding.Outcome:
        return await forwarding.forward(
            services=services,
            principal=principal,
            run=context.run_key(ctx),
            server=server,
            method=method,
            params=params,
            report=context.reporter(ctx),
            stop=stop,
            bound=TASK_AFTER_SECONDS if as_task else None,
            relayed=rounds.relayed_by(ctx),
            logs=context.log_follower(ctx),
            close_stream=context.stream_closer(ctx),
            gateway_session=gateway_session,
        )

    try:
        if as_task:  # its questions go to the client through tasks/get
            return await held(lambda waiting, asks: True)
        return await rounds.with_offers(ctx, services, principal, held)
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None


async def _retried(ctx: Context, method: str, request_state: str, responses: Any) -> forwarding.Outcome:
    """A 2026-07-28 agent's retry with its client's answers: they decide, then the call is held again."""
    services, principal = context.services(ctx), context.caller(ctx)
    try:
        call_id = await rounds.take_answers(services, principal, request_state, responses)
        driving(call_id)
        outcome = await _hold(ctx, call_id, offer=True)
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None
    if outcome.view.call.method != method:
        raise MCPError(types.INVALID_PARAMS, "this requestState belongs to another kind of request")
    return outcome


async def _await(ctx: Context, arguments: dict[str, Any]) -> forwarding.Outcome:
    call_id = arguments.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise MCPError(types.INVALID_PARAMS, "call_id is required: the console call id a result named")
    try:
        return await _hold(ctx, call_id, offer=False)
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None


async def _hold(ctx: Context, call_id: str, *, offer: bool) -> forwarding.Outcome:
    """Hold an existing call of the caller's own runs; with `offer`, its questions go to the agent's
    client as for a new call.

    Raises:
        ConsoleError: the call is not the caller's (recorded).
    """
    services, principal = context.services(ctx), context.caller(ctx)
    async with transaction(services.factory) as session:  # a refusal commits its record
        await view_call(session=session, viewer=principal.viewer, call_id=call_id, attempt="await", own=True)

    logs = context.log_follower(ctx)

    async def held(stop: forwarding.Stop) -> forwarding.Outcome:
        return await forwarding.hold(
            services=services,
            principal=principal,
            call_id=call_id,
            report=context.reporter(ctx),
            stop=stop,
            logs=logs,
            close_stream=context.stream_closer(ctx),
        )

    if offer:
        return await rounds.with_offers(ctx, services, principal, held)
    return await held(lambda waiting, asks: False)


async def _handed_over(
    ctx: Context, method: str, outcome: forwarding.Outcome, given: dict[str, Any]
) -> tuple[forwarding.Outcome, dict[str, Any] | None]:
    """The outcome, and the `input_required` result that gives a 2026-07-28 client what it may answer.

    A first request may carry answers already (`given`: its `inputResponses`, without a `requestState`).
    Nobody asked yet, so they are held back until the server asks and the team's policy offers its
    question to the agent; then each answer given for a key asked is taken as the agent's answer on a
    retry.
    """
    handed = rounds.handed_over(context.services(ctx), context.caller(ctx), ctx, outcome)
    early = dict(given)
    while handed is not None and (asked := handed["inputRequests"].keys() & early.keys()):
        answers = {key: early.pop(key) for key in asked}
        outcome = await _retried(ctx, method, handed["requestState"], answers)
        handed = rounds.handed_over(context.services(ctx), context.caller(ctx), ctx, outcome)
    return outcome, handed


async def _catalog(ctx: Context, *kinds: Listing) -> Catalog:
    services, principal = context.services(ctx), context.caller(ctx)
    only = context.only_server(ctx)
    key = (principal.token_id or "", only, kinds)
    kept = services.memo.catalogs.get(key)
    if kept is not None:
        return kept
    try:
        async with transaction(services.factory) as session:  # ended before the servers are asked
            servers = await upstreams(
                session=session, principal=principal, settings=services.settings, only=only
            )
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None
    catalog = await build_catalog(pool=services.pool, servers=servers, prefixed=only is None, kinds=kinds)
    services.memo.catalogs.put(key, catalog)
    return catalog


def _complete(result: dict[str, Any]) -> dict[str, Any]:
    """A final result (the SDK drops `resultType` for a 2025-11-25 client)."""
    return {**result, "resultType": "complete"}
