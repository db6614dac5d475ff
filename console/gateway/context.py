"""What a gateway handler knows about the request it serves: the caller, the path's server, the
console's services, and the run the request is filed under."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server import ServerRequestContext
from starlette.requests import Request

from console.dispatch.signals import LogFollower
from console.errors import ConsoleError, Forbidden, InvalidInput, NotFound, PayloadTooLarge, Unauthorized
from console.gateway.attendance import EXCHANGE, Exchange
from console.gateway.auth import PRINCIPAL, still_valid
from console.gateway.forwarding import CloseStream, Report, RunKey, Services
from console.gateway.subscribed import SessionSubscriptions, Subscriptions
from console.identity import Principal
from console.mcp.endpoint import LOG_LEVELS

Context = ServerRequestContext[Any, Any]
RUN_META = "io.approval-console/run"  # an agent names its run in a request's _meta ...
RUN_HEADER = "console-run"  # ... or in this header
SESSION_HEADER = "mcp-session-id"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"  # a 2026-07-28 request's self-reported client
MAX_CLIENT_TITLE = 60  # characters of the client's name in a run's title
LOG_DATA_CHARS = 16_384  # a server's log entry longer than this (as JSON) reaches the agent as a note
SHARED = "console_gateway"  # key of the request's state the handlers find what their gateway shares under


@dataclass(frozen=True)
class Shared:
    """What every request to one gateway shares: the console's services (from its Runtime), its
    sessions' resource subscriptions, the agents' roots, and whether the console is stopping."""

    services: Services
    subscriptions: Subscriptions
    session_of_call: Callable[[Context], Awaitable[str | None]]
    stopping: Callable[[], bool]


def request_of(ctx: Context) -> Request:
    request = ctx.request
    if not isinstance(request, Request):
        raise RuntimeError("the gateway serves only HTTP requests")
    return request


def shared(ctx: Context) -> Shared:
    found = getattr(request_of(ctx).state, SHARED, None)
    if not isinstance(found, Shared):
        raise RuntimeError("a gateway request reached the SDK without passing through the gateway")
    return found


def services(ctx: Context) -> Services:
    return shared(ctx).services


def console_stopping(ctx: Context) -> bool:
    """Whether the console is stopping (and so cancels the requests it still serves)."""
    return shared(ctx).stopping()


def caller(ctx: Context) -> Principal:
    principal = getattr(request_of(ctx).state, PRINCIPAL, None)
    if not isinstance(principal, Principal):
        raise RuntimeError("a gateway request reached the SDK without being authenticated")
    return principal


def only_server(ctx: Context) -> str | None:
    server = request_of(ctx).path_params.get("server")
    return server if isinstance(server, str) else None


def run_key(ctx: Context) -> RunKey:
    """The run a request belongs to: one the agent names, else its 2025-11-25 session's, else one per token
    and day (2026-07-28 requests are each on their own). Each key is the caller's own: a session id sent
    by someone else files their requests under a run of theirs."""
    request, principal = request_of(ctx), caller(ctx)
    client = ctx.session.client_params
    info = client.client_info if client is not None else None
    agent = f"{info.name} {info.version}".strip() if info is not None else "MCP agent"
    named = (ctx.meta or {}).get(RUN_META) or request.headers.get(RUN_HEADER)
    if isinstance(named, str) and named.strip():
        name = named.strip()[:200]
        return RunKey(f"name:{principal.user_id}:{name}", name, agent)
    session_id = request.headers.get(SESSION_HEADER)
    now = datetime.now(UTC)
    # Named as a person recognises the run: which client, through which address, from when.
    began = f"{_client_title(ctx)} via {request.url.path[:80]}, {now.day} {now:%b %H:%M} UTC"
    if session_id:
        return RunKey(f"session:{principal.user_id}:{session_id}", began, agent)
    day = f"{now:%Y-%m-%d}"
    return RunKey(f"token:{principal.token_id}:{day}", began, agent)


def _client_title(ctx: Context) -> str:
    """The agent's client by its display name (its self-reported clientInfo title, else name)."""
    client = ctx.session.client_params
    info = client.client_info if client is not None else None
    sent = (ctx.meta or {}).get(CLIENT_INFO_META)
    if info is not None:
        name: object = info.title or info.name
    elif isinstance(sent, dict):
        name = sent.get("title") or sent.get("name")
    else:
        name = None
    words = " ".join(name.split())[:MAX_CLIENT_TITLE] if isinstance(name, str) else ""
    return words or "An MCP client"


def as_mcp_error(exc: ConsoleError) -> MCPError:
    """A console refusal as the JSON-RPC error the agent gets (the message says why; fields ride along)."""
    if isinstance(exc, InvalidInput | NotFound):
        data = getattr(exc, "fields", None) or None
        return MCPError(types.INVALID_PARAMS, exc.message, data)
    if isinstance(exc, Forbidden | Unauthorized | PayloadTooLarge):
        return MCPError(types.INVALID_REQUEST, exc.message)
    return MCPError(types.INTERNAL_ERROR, exc.message)


def reporter(ctx: Context) -> Report:
    """Progress notifications for the request (sent only when the agent gave a progress token)."""

    async def report(progress: float, total: float | None, message: str | None) -> None:
        await ctx.session.report_progress(progress, total, message)

    return report


def stream_closer(ctx: Context) -> CloseStream | None:
    """How to close the agent's response stream for its client to resume it: 2025-11-25 sessions only
    (a 2026-07-28 client cannot resume a request's stream)."""
    return ctx.close_sse_stream if ctx.session.can_send_request else None


def exchange(ctx: Context) -> Exchange | None:
    """The HTTP exchange of a 2025-11-25 session's request (a 2026-07-28 request's end cancels it)."""
    if not ctx.session.can_send_request:
        return None
    found = getattr(request_of(ctx).state, EXCHANGE, None)
    return found if isinstance(found, Exchange) else None


def subscriptions(ctx: Context) -> SessionSubscriptions:
    """The resource subscriptions of the caller's 2025-11-25 session."""
    parts = shared(ctx)
    return parts.subscriptions.of(ctx.session, parts.services.pool, still_allowed(ctx))


def still_allowed(ctx: Context) -> Callable[[], Awaitable[bool]]:
    """Whether the caller's token still lets them in, asked anew on each call (for streams that last)."""
    return still_valid(request_of(ctx).scope, services(ctx).factory)


def session_key(ctx: Context) -> tuple[str, str] | None:
    """The caller's 2025-11-25 session, if the request belongs to one."""
    session_id = request_of(ctx).headers.get(SESSION_HEADER)
    return (caller(ctx).token_id or "", session_id) if session_id else None


def log_follower(ctx: Context) -> LogFollower | None:
    """Where the server's log notifications go for this request, if the agent asked for them: a
    2026-07-28 request names its level in `_meta`, a 2025-11-25 session sets it with logging/setLevel."""
    level = (ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
    if not isinstance(level, str):
        key = session_key(ctx)
        level = services(ctx).memo.log_levels.get(key) if key is not None else None
    if level not in LOG_LEVELS:
        return None

    async def log(level: str, data: Any, logger: str | None) -> None:
        size = len(json.dumps(data, ensure_ascii=False, default=str))
        if size > LOG_DATA_CHARS:
            data = f"(a log entry of {size} characters, left out)"
        params = types.LoggingMessageNotificationParams.model_validate(
            {"level": level, "data": data, "logger": logger}
        )
        notification = types.LoggingMessageNotification(params=params)
        await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

    return LogFollower(str(level), log)
