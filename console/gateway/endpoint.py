"""The gateway's HTTP endpoints, `/mcp` and `/mcp/<server>`: each request is authenticated (and its
server found) before the SDK's Streamable HTTP session manager reads a byte of its body."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server import Server
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import INVALID_PARAMS
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from console.config import Settings, secret_text
from console.errors import Conflict, NotFound
from console.gateway.agent_roots import AgentRootsKeeper
from console.gateway.attendance import EXCHANGE, Attendances
from console.gateway.auth import Refusal, authenticate
from console.gateway.context import SESSION_HEADER, SHARED, Shared
from console.gateway.events import RETRY_MS, RecentEvents
from console.gateway.forwarding import Services
from console.gateway.memo import CALLER, Memo
from console.gateway.origins import refused_site
from console.gateway.request_state import StateSeal
from console.gateway.server import build_server
from console.gateway.subscribed import Subscriptions
from console.mcp.registry import server_by_name
from console.outage import unavailable
from console.runtime import Runtime
from console.transactions import transaction

logger = logging.getLogger(__name__)

PATH = r"/mcp(?:/(?P<server>[^/]+))?"  # /mcp: every server of the team; /mcp/<server>: that one
METHODS = ["GET", "POST", "DELETE"]


class Sessions(StreamableHTTPSessionManager):
    """The SDK's session manager, with each 2025-11-25 session's transport given a store of its own: the
    SDK would hand one store to every transport, and a store is not told whose events it keeps."""

    def __init__(self, app: Server[Any], events: RecentEvents, **options: Any) -> None:
        super().__init__(app=app, event_store=None, **options)
        self.events = events

    def _admit_session(self, requestor: AuthorizationContext | None) -> StreamableHTTPServerTransport | None:
        transport = super()._admit_session(requestor)
        if transport is not None:
            transport._event_store = self.events.for_session()
        return transport


class Gateway:
    """An ASGI app for `PATH`; `running()` must be entered for the app's lifetime."""

    def __init__(self, settings: Settings) -> None:
        self.memo = Memo()
        self._base_url = settings.base_url
        self.seal = StateSeal(secret_text(settings))
        self.subscriptions = Subscriptions()
        self.roots = AgentRootsKeeper()
        self.attendances = Attendances()
        self.stopping = False  # set before the sessions' requests are cancelled as the console stops
        self._shared: Shared | None = None  # while running
        self._manager = Sessions(
            build_server(self.memo, self.roots),
            RecentEvents(),
            retry_interval=RETRY_MS,
            max_request_body_size=settings.max_params_bytes,
        )

    @asynccontextmanager
    async def running(self, runtime: Runtime) -> AsyncIterator[None]:
        """Serve with the console's `runtime` for as long as the app runs."""
        self._shared = Shared(
            services=Services.of(runtime, memo=self.memo, seal=self.seal),
            subscriptions=self.subscriptions,
            session_of_call=self.roots.session_of_call,
            stopping=lambda: self.stopping,
        )
        async with self.subscriptions.running(), self.roots.running(), self._manager.run():
            try:
                yield
            finally:
                self.stopping = True

    def stop(self) -> None:
        """The console is stopping: the requests cancelled from now on leave their calls as they are."""
        self.stopping = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        shared = self._shared
        if shared is None:
            raise RuntimeError("the gateway serves only while its app runs")
        factory = shared.services.factory
        refused = refused_site(scope, self._base_url)
        if refused is not None:
            await Refusal(403, refused)(scope, receive, send)
            return
        only = scope.get("path_params", {}).get("server")
        try:
            principal = await authenticate(scope, factory)
            if isinstance(principal, Refusal):
                await principal(scope, receive, send)
                return
            if only is not None:
                async with transaction(factory) as session:
                    await server_by_name(session=session, team_id=principal.team_id, name=only)
        except (NotFound, Conflict) as exc:
            status = 404 if isinstance(exc, NotFound) else 409
            await Refusal(status, exc.message, code=INVALID_PARAMS)(scope, receive, send)
            return
        except Exception as exc:
            outage = unavailable(exc)
            if outage is None:
                raise
            logger.warning("answered 503 to the gateway: %s", outage.message)
            session_id = Headers(scope=scope).get(SESSION_HEADER)
            if session_id:
                self.roots.missed(session_id)
            await Refusal(503, outage.message, retry_after=outage.retry_after)(scope, receive, send)
            return
        scope.setdefault("state", {})[SHARED] = shared
        caller = CALLER.set((principal.token_id or "", only))
        try:
            session_id = Headers(scope=scope).get(SESSION_HEADER)
            if session_id is None:
                await self._manager.handle_request(scope, receive, send)
                return
            with self.attendances.of(principal.token_id or "", session_id).exchange() as exchange:
                scope.setdefault("state", {})[EXCHANGE] = exchange
                await self._manager.handle_request(scope, receive, send)
        finally:
            CALLER.reset(caller)
