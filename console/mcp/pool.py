"""Warm connections, one per endpoint, started on first use and replaced when they die."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from types import TracebackType
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import TaskGroup
from mcp.client.subscriptions import Subscription

from console.config import CONNECT_TIMEOUT_SECONDS, MAX_RESULT_BYTES, Settings
from console.errors import McpUnavailable
from console.mcp.connection import Connection, LinkDone, ListedTool, Listing
from console.mcp.endpoint import Endpoint, McpRequest, Reply
from console.mcp.roots import Root
from console.mcp.transports import Transports

# The endpoint without its roots, what it relays, whether it listens, and whether it has roots: a change
# of roots is told to the live connection (Connection.change_roots), which keeps serving.
Key = tuple[Endpoint, frozenset[str], bool, bool]
# An agent's 2025-11-25 gateway session whose client answers roots has connections of its own (the
# endpoint names the session), told the agent's roots. Each agent holds this many at most: opening one
# more closes its least recently used idle one, and when none is idle the request is not sent (the
# dispatcher sends it again later). One idle this long is closed, as is every one of a session that
# ended (`close_session`).
MAX_AGENT_CONNECTIONS = 8
SESSION_IDLE_SECONDS = 600.0


class ConnectionPool:
    """Owns every connection's task; use as an async context manager around the app's lifetime."""

    def __init__(
        self,
        *,
        request_timeout: float,
        max_result_bytes: int = MAX_RESULT_BYTES,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        session_idle_seconds: float = SESSION_IDLE_SECONDS,
        max_agent_connections: int = MAX_AGENT_CONNECTIONS,
        transports: Transports | None = None,
    ) -> None:
        self._transports = transports  # reaches some endpoints itself; the rest by their own transport
        self._request_timeout = request_timeout
        self._session_idle_seconds = session_idle_seconds
        self._max_agent_connections = max_agent_connections
        self._max_result_bytes = max_result_bytes
        self._connect_timeout = connect_timeout
        # One connection per endpoint and what it relays: a server learns per connection (2025-11-25) or
        # per request from that connection's callbacks (2026-07-28) what the client answers. Listen
        # streams to an HTTP server have a connection of their own (see Connection.listening).
        self._connections: dict[Key, Connection] = {}
        self._locks: dict[Key, anyio.Lock] = {}
        self._task_group: TaskGroup | None = None
        # Told when a server says a link it required earlier is done (console/dispatch/link_notices.py).
        self.link_done: LinkDone | None = None

    @classmethod
    def of(cls, settings: Settings, transports: Transports | None = None) -> ConnectionPool:
        """A pool with the process's configured timeouts and result limit (and `transports`, if any)."""
        return cls(
            request_timeout=settings.request_timeout_seconds,
            max_result_bytes=settings.max_result_bytes,
            connect_timeout=settings.connect_timeout_seconds,
            transports=transports,
        )

    async def __aenter__(self) -> ConnectionPool:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._close_idle_sessions)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._task_group is None:
            raise RuntimeError("ConnectionPool exited without being entered")
        for connection in self._connections.values():
            connection.close()
        self._task_group.cancel_scope.cancel()
        await self._task_group.__aexit__(exc_type, exc, tb)
        self._task_group = None

    def ended(self, endpoint: Endpoint) -> anyio.Event:
        """An event set when the endpoint's current connection ends (KeyError if there is none)."""
        return self._connections[_plain(endpoint)].ended

    async def send(self, endpoint: Endpoint, request: McpRequest) -> Reply:
        """Send on the endpoint's warm connection (the one relaying what the request relays), (re)starting
        it first if needed."""
        connection = await self._connection(endpoint, request.relayed)
        if connection.holding:
            return await self._send_aside(endpoint, request)
        try:
            return await connection.send(request)
        except McpUnavailable:
            # Died between our check and the send (nothing was written): start afresh once.
            connection = await self._connection(endpoint, request.relayed)
            return await connection.send(request)

    async def _send_aside(self, endpoint: Endpoint, request: McpRequest) -> Reply:
        """An older server's connection carries one request at a time, and its request is held open for a
        person's answer: this one goes on a connection of its own, closed once it is answered."""
        if self._task_group is None:
            raise RuntimeError("ConnectionPool used outside its context")
        connection = Connection(
            endpoint,
            request_timeout=self._request_timeout,
            relayed=request.relayed,
            max_result_bytes=self._max_result_bytes,
            connect_timeout=self._connect_timeout,
            on_link_done=self._link_done,
            transports=self._transports,
        )
        await self._task_group.start(connection.run)
        try:
            return await connection.send(request)
        finally:
            connection.close()

    async def list_tools(self, endpoint: Endpoint) -> list[dict[str, Any]]:
        connection = await self._connection(endpoint)
        return await connection.list_tools()

    async def listing(self, endpoint: Endpoint, kind: Listing) -> list[dict[str, Any]]:
        """What the endpoint lists of one kind (tools, prompts, resources, templates), kept a while."""
        connection = await self._connection(endpoint)
        return await connection.listing(kind)

    async def complete(self, endpoint: Endpoint, params: types.CompleteRequestParams) -> dict[str, Any]:
        connection = await self._connection(endpoint)
        return await connection.complete(params)

    @asynccontextmanager
    async def listen(
        self, endpoint: Endpoint, wanted: types.SubscriptionFilter
    ) -> AsyncIterator[Subscription]:
        """A `subscriptions/listen` stream to the endpoint (see `Connection.listen`)."""
        connection = await self._connection(endpoint, listening=endpoint.transport == "http")
        async with connection.listen(wanted) as subscription:
            yield subscription

    def forget_listings(self, endpoint: Endpoint) -> None:
        """The endpoint said a listing changed: ask again next time."""
        connection = self._connections.get(_plain(endpoint))
        if connection is not None:
            connection.forget_listings()

    async def find_tool(self, endpoint: Endpoint, name: str) -> ListedTool | None:
        """The tool if the server lists it (the listing is re-read once before saying no)."""
        connection = await self._connection(endpoint)
        known = self.known_tool(endpoint, name)
        if known is not None:
            return known
        await connection.list_tools()
        if name not in connection.tool_names:
            return None
        return connection.tools[name]

    def known_tool(self, endpoint: Endpoint, name: str) -> ListedTool | None:
        """The tool as the endpoint's live connection last listed it; None when only asking can tell."""
        connection = self._connections.get(_plain(endpoint))
        if connection is None or not connection.alive:
            return None
        if name not in connection.tool_names:
            return None
        return connection.tools[name]

    async def _link_done(self, endpoint: Endpoint, elicitation_id: str) -> None:
        if self.link_done is not None:
            await self.link_done(endpoint, elicitation_id)

    def protocol(self, endpoint: Endpoint) -> str | None:
        """The protocol version the endpoint's connection negotiated, if it has connected."""
        connection = self._connections.get(_plain(endpoint))
        return connection.protocol_version if connection is not None else None

    def close_session(self, session_id: str) -> None:
        """The agent's gateway session ended: its connections are closed (their servers too, on stdio)."""
        for key, connection in list(self._connections.items()):
            if connection.endpoint.session is not None and connection.endpoint.session.id == session_id:
                connection.close()
                del self._connections[key]
                self._locks.pop(key, None)

    async def change_session_roots(self, session_id: str, roots: tuple[Root, ...]) -> None:
        """The agent's roots changed: its session's live connections answer with them and tell their
        servers (`Connection.change_roots`)."""
        for connection in list(self._connections.values()):
            session = connection.endpoint.session
            if session is not None and session.id == session_id and connection.alive:
                await connection.change_roots(roots)

    async def _close_idle_sessions(self) -> None:
        while True:
            await anyio.sleep(min(60.0, self._session_idle_seconds / 2))
            now = time.monotonic()
            for key, connection in list(self._connections.items()):
                if connection.endpoint.session is None or connection.requests_out:
                    continue
                if not connection.alive or now - connection.last_used >= self._session_idle_seconds:
                    connection.close()
                    del self._connections[key]
                    self._locks.pop(key, None)

    def _make_room(self, agent: str) -> None:
        """Close the agent's least recently used idle session connection when it holds the most it may.

        Raises:
            McpUnavailable: every one of them has a request out.
        """
        held = [
            (key, connection)
            for key, connection in self._connections.items()
            if connection.endpoint.session is not None and connection.endpoint.session.agent == agent
        ]
        if len(held) < self._max_agent_connections:
            return
        idle = [(connection.last_used, key) for key, connection in held if not connection.requests_out]
        if not idle:
            raise McpUnavailable(
                f"the agent's gateway sessions hold {len(held)} connections with requests out; "
                "the request is sent once one is free"
            )
        _, key = min(idle)
        self._connections.pop(key).close()
        self._locks.pop(key, None)

    async def _connection(
        self, endpoint: Endpoint, relayed: frozenset[str] = frozenset(), *, listening: bool = False
    ) -> Connection:
        if self._task_group is None:
            raise RuntimeError("ConnectionPool used outside its context")
        key = _key(endpoint, relayed, listening)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            current = self._connections.get(key)
            if current is not None and current.alive:
                await current.change_roots(endpoint.roots)
                return current
            if endpoint.session is not None:
                self._make_room(endpoint.session.agent)
            connection = Connection(
                endpoint,
                request_timeout=self._request_timeout,
                relayed=relayed,
                listening=listening,
                max_result_bytes=self._max_result_bytes,
                connect_timeout=self._connect_timeout,
                on_link_done=self._link_done,
                transports=self._transports,
            )
            await self._task_group.start(connection.run)
            self._connections[key] = connection
            return connection


def _plain(endpoint: Endpoint) -> Key:
    """The key of the endpoint's connection that relays nothing and does not listen."""
    return _key(endpoint, frozenset(), False)


def _key(endpoint: Endpoint, relayed: frozenset[str], listening: bool) -> Key:
    # A session's connection always answers roots (the agent's, however many): one serves all its changes.
    has_roots = bool(endpoint.roots) or endpoint.session is not None
    return (replace(endpoint, roots=()), relayed, listening, has_roots)
