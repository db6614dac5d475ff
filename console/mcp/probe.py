"""'Test connection': a fresh, bounded connection to a server that reports its tools or a clear error.

Everything the server sends is untrusted: tool names, titles and descriptions are only ever shown as
escaped text, hints count only when they are real booleans, and a listing is capped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any

import anyio
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.errors import McpError, McpUnavailable
from console.identity.credentials import SecretMissing
from console.identity.teams import actor_of
from console.identity.viewer import Viewer
from console.mcp.connection import Connection
from console.mcp.endpoint import Endpoint
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound

PROBE_TIMEOUT_SECONDS = 15.0
MAX_TOOLS = 500
MAX_TEXT = 2000


@dataclass(frozen=True)
class ToolInfo:
    """One listed tool; a hint is None when the server did not say."""

    name: str
    title: str | None = None
    description: str = ""
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None


@dataclass(frozen=True)
class ProbeOutcome:
    ok: bool
    seconds: float
    tools: list[ToolInfo] = field(default_factory=list)
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    protocol: str | None = None  # the MCP version negotiated, once the server answered


async def probe_server(
    *,
    session: AsyncSession,
    by: Viewer | None,
    team_name: str,
    server: McpServer,
    outbound: Outbound,
    limit_seconds: float = PROBE_TIMEOUT_SECONDS,
) -> tuple[McpServer, ProbeOutcome]:
    """Connect to the team's server afresh (disabled or not), list its tools, and record that it was tested.
    `server` is what `mcp.admin.server_for_admin` gave `by`, in a transaction the entry point ended: none
    stays open while the server is reached.

    The connection is held to the same rules as calls: public addresses only unless the server is internal.
    """
    per_user = server.credential_mode == "per_user"
    try:
        endpoint = endpoint_for(server, outbound)
    except SecretMissing as exc:
        outcome = ProbeOutcome(False, 0.0, error=exc.message)
    else:
        outcome = await probe(endpoint, limit_seconds=limit_seconds, per_user=per_user)
    if outcome.protocol is not None:
        server.protocol_version = outcome.protocol
    if per_user:
        note = "tested with the shared settings only, without anyone's personal credential"
        outcome = replace(outcome, notes=[*outcome.notes, note])
    record_event(
        session=session,
        actor=actor_of(by),
        action="server_tested",
        subject_type="server",
        subject_id=server.id,
        payload={"name": server.name, "team": team_name, "ok": outcome.ok, "tools": len(outcome.tools)},
    )
    return server, outcome


async def probe(
    endpoint: Endpoint, *, limit_seconds: float = PROBE_TIMEOUT_SECONDS, per_user: bool = False
) -> ProbeOutcome:
    """Start, negotiate and list tools within `limit_seconds`; never raises for what the server does.

    `per_user`: the server expects each user's own credential, which a test connection does not have.
    """
    started = time.monotonic()
    connection = Connection(endpoint, request_timeout=limit_seconds)
    notes: list[str] = []
    try:
        with anyio.fail_after(limit_seconds):
            listing = await _listing(connection)
    except TimeoutError:
        return _failed(started, f"no complete answer within {limit_seconds:g} s")
    except McpUnavailable as exc:
        if exc.http_status is None:
            return _failed(started, exc.message)
        return _failed(started, refusal(exc.http_status, endpoint, per_user=per_user))
    except McpError as exc:
        return _failed(started, exc.message)
    except ValidationError:
        return _failed(started, "the server sent a tool list that is not valid MCP")
    if connection.legacy_version is not None:
        notes.append(
            f"the server speaks MCP {connection.legacy_version}: a question it pushes in the middle of a "
            "call is held open until a person answers it, on a connection that carries that one call"
        )
    if len(listing) > MAX_TOOLS:
        notes.append(f"the server lists {len(listing)} tools; only the first {MAX_TOOLS} are shown")
    tools = [_tool(item) for item in listing[:MAX_TOOLS]]
    return ProbeOutcome(True, time.monotonic() - started, tools, None, notes, connection.protocol_version)


async def connects(endpoint: Endpoint, limit_seconds: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """Whether a connection to `endpoint` negotiates within `limit_seconds`."""
    connection = Connection(endpoint, request_timeout=limit_seconds)
    try:
        with anyio.fail_after(limit_seconds):
            await _listing(connection)
    except (TimeoutError, McpError, ValidationError):
        return False
    return True


def refusal(status: int, endpoint: Endpoint, *, per_user: bool) -> str:
    """'401: why', for an HTTP server that refused the connection with this status."""
    if status == 401 and per_user:
        why = "this server needs each user's own credentials"
    elif status == 401 and endpoint.headers:
        why = "the server refused the credentials in this server's headers"
    elif status == 401:
        why = "the server needs credentials: add a header such as Authorization, or per-user credentials"
    elif status == 403:
        why = "the server refuses access with these credentials"
    elif status == 404:
        why = "nothing answers MCP at this URL (check the path; it often ends in /mcp)"
    elif status == 405:
        why = "this URL does not take MCP requests"
    elif status >= 500:
        why = "the server failed (its own logs say why)"
    else:
        why = _phrase(status)
    return f"{status}: {why}"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "refused"


def _failed(started: float, message: str) -> ProbeOutcome:
    return ProbeOutcome(False, time.monotonic() - started, error=message)


async def _listing(connection: Connection) -> list[dict[str, Any]]:
    listing: list[dict[str, Any]] = []
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(connection.run)
            try:
                listing = await connection.list_tools()
            finally:
                connection.close()
    except BaseExceptionGroup as group:
        # The task group wraps what the connection raised; callers want that one error.
        leaves = _leaves(group)
        if len(leaves) == 1 and isinstance(leaves[0], Exception):
            raise leaves[0] from None
        raise
    return listing


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


def _tool(item: dict[str, Any]) -> ToolInfo:
    annotations = item.get("annotations")
    hints: dict[str, Any] = annotations if isinstance(annotations, dict) else {}
    title = item.get("title") or hints.get("title")
    return ToolInfo(
        name=_text(item.get("name")) or "(unnamed)",
        title=_text(title) or None,
        description=_text(item.get("description")),
        read_only=_hint(hints.get("readOnlyHint")),
        destructive=_hint(hints.get("destructiveHint")),
        idempotent=_hint(hints.get("idempotentHint")),
        open_world=_hint(hints.get("openWorldHint")),
    )


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _hint(value: object) -> bool | None:
    return value if isinstance(value, bool) else None
