"""A 2025-11-25 session's `resources/subscribe` URIs, heard from the servers that list them for as long
as the session lasts, each update pushed to the session as `notifications/resources/updated`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from anyio.abc import TaskGroup, TaskStatus
from mcp import MCPError
from mcp.server.session import ServerSession
from mcp.shared.subscriptions import ResourceUpdated, ServerEvent

from console.gateway.catalog import Upstream
from console.gateway.lifetime import GatewayTasks
from console.gateway.watching import MAX_URIS, Source, hear
from console.mcp.pool import ConnectionPool

logger = logging.getLogger(__name__)
Allowed = Callable[[], Awaitable[bool]]
STATE_KEY = "approval-console/subscriptions"


class Subscriptions(GatewayTasks):
    """Every session's subscriptions; `running()` must be entered for the gateway's lifetime."""

    def of(self, session: ServerSession, pool: ConnectionPool, allowed: Allowed) -> SessionSubscriptions:
        """The subscriptions of the session `session` serves a request of (made on first use)."""
        if self._task_group is None:
            raise RuntimeError("the gateway's subscriptions are not running")
        connection = connection_of(session)
        found = connection.state.get(STATE_KEY)
        if not isinstance(found, SessionSubscriptions):
            found = SessionSubscriptions(self._task_group, pool, session, allowed)
            connection.state[STATE_KEY] = found
            connection.exit_stack.callback(found.close)
        return found


class SessionSubscriptions:
    def __init__(
        self, tasks: TaskGroup, pool: ConnectionPool, session: ServerSession, allowed: Allowed
    ) -> None:
        self._tasks = tasks
        self._pool = pool
        self._session = session  # its connection's own channel carries what no request asked
        self._allowed = allowed  # the session's token, asked again before each update is told
        self._uris: dict[str, set[str]] = {}  # server name -> URIs
        self._upstreams: dict[str, Upstream] = {}
        self._hearing: dict[str, tuple[anyio.CancelScope, types.SubscriptionFilter]] = {}
        self._changing = anyio.Lock()  # one subscribe or unsubscribe of the session at a time

    async def subscribe(self, upstream: Upstream, uri: str) -> bool:
        """Hear of changes to `uri` from `upstream`; False (and not subscribed) when it does not tell.

        Raises:
            MCPError: the session holds `MAX_URIS` subscriptions already.
        """
        async with self._changing:
            uris = self._uris.setdefault(upstream.name, set())
            if uri in uris:
                return True
            if sum(len(kept) for kept in self._uris.values()) >= MAX_URIS:
                raise MCPError(
                    types.INVALID_PARAMS, f"a session may subscribe to {MAX_URIS} resources at most"
                )
            uris.add(uri)
            self._upstreams[upstream.name] = upstream
            honored = await self._hear(upstream.name)
            if uri in (honored.resource_subscriptions or ()):
                return True
            uris.discard(uri)
            await self._hear(upstream.name)
            return False

    async def unsubscribe(self, uri: str) -> None:
        async with self._changing:
            for name, uris in self._uris.items():
                if uri in uris:
                    uris.discard(uri)
                    await self._hear(name)
                    return

    def close(self) -> None:
        for scope, _ in self._hearing.values():
            scope.cancel()
        self._hearing.clear()

    async def _hear(self, name: str) -> types.SubscriptionFilter:
        """Hear the server for its URIs now, and what it agreed to tell; the stream that heard the old
        set ends only once the new one listens, so no update falls between them."""
        old = self._hearing.pop(name, None)
        uris = self._uris.get(name, set())
        honored = types.SubscriptionFilter()
        if uris:
            wanted = types.SubscriptionFilter(resource_subscriptions=sorted(uris))
            source = Source(self._upstreams[name], wanted)
            scope, honored = await self._tasks.start(self._hear_in_scope, source)
            self._hearing[name] = (scope, honored)
        if old is not None:
            old[0].cancel()
        return honored

    async def _hear_in_scope(
        self, source: Source, *, task_status: TaskStatus[tuple[anyio.CancelScope, types.SubscriptionFilter]]
    ) -> None:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as hearing:
                honored = await hearing.start(hear, self._pool, source, self._deliver)
                task_status.started((scope, honored))

    async def _deliver(self, event: ServerEvent) -> None:
        if not isinstance(event, ResourceUpdated):
            return
        if not await self._allowed():  # revoked, or no longer a member: the session hears no more
            self.close()
            return
        try:
            await self._session.send_resource_updated(event.uri)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.debug("gateway: a session's update for %s found no open stream", event.uri)


def connection_of(session: ServerSession) -> Any:
    # A low-level handler reaches the SDK's per-connection state and teardown (`state`, `exit_stack`)
    # only through the request's session.
    connection = getattr(session, "_connection", None)
    if connection is None or not hasattr(connection, "exit_stack"):
        raise RuntimeError("this mcp SDK keeps no per-connection state where the gateway looks")
    return connection
