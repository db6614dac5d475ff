"""A 2025-11-25 session's own roots, when its agent's client declares the `roots` capability: asked of
the client before the session's first call is filed, kept per session (console/mcp/agent_roots.py) for
whichever console process sends its calls on a connection of that session, asked again when the client
says they changed (`notifications/roots/list_changed`, passed on to the session's live connections),
and forgotten, with those connections, when the session ends.

2026-07-28 has no sessions, no requests to the client outside a call and no such notification: there an
agent's roots reach a server only inside its own calls (console/gateway/rounds.py).
"""

from __future__ import annotations

import logging

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server.session import ServerSession
from mcp.shared.message import ServerMessageMetadata
from pydantic import ValidationError

from console.errors import InvalidInput
from console.gateway.context import SESSION_HEADER, Context, caller, request_of, services
from console.gateway.forwarding import Services
from console.gateway.lifetime import GatewayTasks
from console.gateway.memo import SESSION_SECONDS, Recent
from console.gateway.subscribed import connection_of
from console.mcp.agent_roots import agents_roots, forget_agent_roots, keep_agent_roots
from console.mcp.roots import Root
from console.outage import unavailable
from console.transactions import transaction

logger = logging.getLogger(__name__)
STATE_KEY = "approval-console/roots"
ASK_SECONDS = 10.0  # how long the agent's client may take to list its roots
MAX_SESSION_ID_CHARS = 100  # as `call.gateway_session` keeps it; the SDK's own ids are far shorter


class AgentRootsKeeper(GatewayTasks):
    """Where the sessions' re-asks run; `running()` must be entered for the gateway's lifetime."""

    def __init__(self) -> None:
        super().__init__()
        # Sessions a request of which was answered 503 (the database away): what it said may have been
        # that its roots changed, and a client does not send a notification again, so its next call asks.
        # Unauthenticated, so it only ever costs an agent one more `roots/list`.
        self._missed: Recent[str, bool] = Recent(seconds=SESSION_SECONDS)

    async def session_of_call(self, ctx: Context) -> str | None:
        """The session a call of this request is filed with, when its agent's client answers roots; the
        agent's roots are then kept for it (asked on the session's first call, and again after the
        database was away). A client that does not answer in time has none kept until it says its roots
        changed.

        Raises:
            MCPError: the client's roots are refused (naming `roots`), or the database cannot serve now.
        """
        capabilities = ctx.session.client_capabilities
        if not ctx.session.can_send_request or capabilities is None or capabilities.roots is None:
            return None
        session_id = request_of(ctx).headers.get(SESSION_HEADER)
        if not session_id or len(session_id) > MAX_SESSION_ID_CHARS:
            return None
        kept = self._kept(ctx, session_id)
        async with kept.lock:
            if self._missed.get(session_id):
                self._missed.put(session_id, False)
                kept.known = False
            if not kept.known:
                related = ServerMessageMetadata(related_request_id=ctx.request_id)
                roots = await kept.ask(ctx.session, related)
                if roots is None:  # not asked again on every call: only once the client says they changed
                    kept.known = True
                else:
                    await kept.store(roots)  # a database outage here is the request's error
        return session_id

    def missed(self, session_id: str) -> None:
        """A request of the session was refused for want of the database (see `_missed`)."""
        self._missed.put(session_id[:MAX_SESSION_ID_CHARS], True)

    def roots_changed(self, ctx: Context) -> None:
        """The client says its roots changed: ask them again, keep them, tell the session's connections.
        Before the session's first call nothing is kept, and that call asks."""
        kept = connection_of(ctx.session).state.get(STATE_KEY)
        if isinstance(kept, SessionRoots) and self._task_group is not None:
            self._task_group.start_soon(kept.refresh, ctx.session)

    def _kept(self, ctx: Context, session_id: str) -> SessionRoots:
        connection = connection_of(ctx.session)
        user_id = caller(ctx).user_id
        kept = connection.state.get(STATE_KEY)
        if not isinstance(kept, SessionRoots):
            kept = SessionRoots(services(ctx), session_id, user_id)
            connection.state[STATE_KEY] = kept
            connection.exit_stack.push_async_callback(kept.forget)
        elif kept.user_id != user_id:
            # The SDK refuses a session's id sent with another credential; should another user's request
            # reach it all the same, what their client lists is never kept as this agent's roots
            # (keep_agent_roots checks the user too).
            return SessionRoots(services(ctx), session_id, user_id)
        return kept


class SessionRoots:
    """One session's roots, as the console last kept them."""

    def __init__(self, services: Services, session_id: str, user_id: str) -> None:
        self._services = services
        self.session_id = session_id
        self.user_id = user_id
        self.known = False  # kept in the database as the client last listed them
        self.lock = anyio.Lock()  # one ask and store at a time

    async def ask(
        self, session: ServerSession, related: ServerMessageMetadata | None
    ) -> tuple[Root, ...] | None:
        """The client's roots; None when it did not answer in time or at all.

        Raises:
            MCPError: what it listed is refused (INVALID_PARAMS, naming `roots`).
        """
        try:
            with anyio.fail_after(ASK_SECONDS):
                listed = await session.send_request(
                    types.ListRootsRequest(), types.ListRootsResult, metadata=related
                )
        except (MCPError, TimeoutError) as exc:
            logger.info("gateway: session %s did not list its roots: %s", self.session_id, _why(exc))
            return None
        except ValidationError as exc:
            message = f"the client's roots/list result is invalid: {exc.errors()[0].get('msg', '')}"
            raise MCPError(types.INVALID_PARAMS, "invalid roots", {"roots": message}) from None
        try:
            return agents_roots(listed.model_dump(by_alias=True, mode="json", exclude_none=True))
        except InvalidInput as exc:
            raise MCPError(types.INVALID_PARAMS, exc.message, exc.fields) from None

    async def store(self, roots: tuple[Root, ...]) -> None:
        async with transaction(self._services.factory) as session:
            await keep_agent_roots(
                session=session, session_id=self.session_id, user_id=self.user_id, roots=roots
            )
        self.known = True

    async def refresh(self, session: ServerSession) -> None:
        """Ask again, keep, and tell this process's connections of the session. If anything fails, the
        old roots stay where they are, and the session's next call asks again."""
        async with self.lock:
            self.known = False
            try:
                roots = await self.ask(session, None)
                if roots is None:
                    return
                await self.store(roots)
            except MCPError as exc:
                logger.warning(
                    "gateway: session %s: roots not changed: %s", self.session_id, exc.error.message
                )
                return
            except Exception as exc:
                outage = unavailable(exc)
                if outage is None:
                    raise
                logger.warning("gateway: session %s: roots not changed: %s", self.session_id, outage.message)
                return
        await self._services.pool.change_session_roots(self.session_id, roots)

    async def forget(self) -> None:
        """The session ended (DELETE, idle expiry, or the console stopping): close its connections and
        forget its roots."""
        self._services.pool.close_session(self.session_id)
        with anyio.CancelScope(shield=True):
            try:
                async with transaction(self._services.factory) as session:
                    await forget_agent_roots(session=session, session_id=self.session_id)
            except Exception as exc:
                if unavailable(exc) is None:
                    raise
                logger.warning("gateway: session %s ended; its roots stay kept: %s", self.session_id, exc)


def _why(exc: BaseException) -> str:
    return exc.error.message if isinstance(exc, MCPError) else f"no answer within {ASK_SECONDS:g} s"
