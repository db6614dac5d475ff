"""One long-lived MCP client connection (a stdio child process or an HTTP client) serving many requests."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

import anyio
import httpx2
import mcp.types as types
from anyio.abc import TaskStatus
from mcp import ClientSession, MCPError
from mcp.client import ClientRequestContext
from mcp.client._probe import negotiate_auto  # ClientSession has no public entry to it
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription, listen
from pydantic import TypeAdapter, ValidationError

from console import __version__
from console.config import CONNECT_TIMEOUT_SECONDS, MAX_RESULT_BYTES
from console.errors import McpLost, McpProtocolError, McpUnavailable, ResultTooLarge
from console.mcp.addresses import public_only_transport
from console.mcp.challenge import AuthorizationRequired, Challenge, challenge_of
from console.mcp.dpop import DPoPTransport
from console.mcp.endpoint import (
    ELICITATION,
    ROOTS,
    SAMPLING,
    Complete,
    Endpoint,
    InputRequired,
    LogSink,
    McpRequest,
    PushedAsk,
    PushedRefused,
    Reply,
    Task,
)
from console.mcp.http_limit import ReplyLimit
from console.mcp.oversize import is_too_large
from console.mcp.replies import invalid_result, told
from console.mcp.roots import Root, roots_result
from console.mcp.stdio import stdio_transport
from console.mcp.tasks import TASK_METHODS, CreatedTask, send_task_request, session_options, task_of
from console.mcp.transports import Transports
from console.mcp.watch import WatchedReadStream

logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="approval-console", version=__version__)
MODERN = "2026-07-28"
# A pushed question names no request, so a 2025-11-25 connection carries one request at a time; a
# request waits this long for its turn, then is sent later (nothing went out, so that is safe).
LEGACY_TURN_SECONDS = 10.0
# A log notification names no request either, so one request at a time may hear the server's logs; a
# request that waited this long for its turn goes without them.
LOG_TURN_SECONDS = 5.0
# While an older server's request is held open, the console's own deadline bounds it (the request timeout
# after the server last heard from a person); the SDK's read timeout only has to outlast that.
HELD_READ_TIMEOUT_SECONDS = 7 * 24 * 3600.0
LISTING_SECONDS = 30.0  # how long a listing is served from memory before the server is asked again
LISTING_PAGES = 100
# How long a server that asked for roots before may take to ask again once told they changed; a request
# waiting to go out waits this long at most.
ROOTS_REASK_SECONDS = 5.0
PushedResult = TypeVar("PushedResult", types.ElicitResult, types.CreateMessageResult, types.ListRootsResult)
Listing = Literal["tools", "prompts", "resources", "resourceTemplates"]
# Told the endpoint and the elicitationId when a server says a link's flow is done.
LinkDone = Callable[[Endpoint, str], Awaitable[None]]
PUSHED_QUESTION = (
    "the server pushed a question in the middle of the call (MCP {version}) and nothing held the call "
    "open to answer it, so the call failed"
)


class Connection:
    """A warm session to one endpoint; `run` owns the transport, `send` may be called concurrently."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        request_timeout: float,
        relayed: frozenset[str] = frozenset(),
        listening: bool = False,
        max_result_bytes: int = MAX_RESULT_BYTES,
        connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
        on_link_done: LinkDone | None = None,
        transports: Transports | None = None,
    ) -> None:
        self.endpoint = endpoint
        self._transports = transports  # reaches some endpoints itself (see console/mcp/transports.py)
        self._on_link_done = on_link_done  # a link's flow is done, said outside any request held here
        self._connect_timeout = connect_timeout  # the TCP connection (or the process) and the handshake
        self.max_result_bytes = max_result_bytes  # no message from the server is read past this
        self.relayed = relayed  # what this connection tells servers it answers besides elicitation
        # As an admin set them last, or on an agent's session connection as its client listed them last
        # (see change_roots).
        self.roots = endpoint.roots
        self._roots_asks = 0  # how often the server asked for roots on this connection
        self._roots_asked = anyio.Event()  # set when it asks (again, after change_roots)
        # A connection for `subscriptions/listen` streams, which may be quiet for hours: its HTTP reads
        # never time out (each listen still waits for its acknowledgment no longer than a request).
        self.listening = listening
        self._request_timeout = request_timeout
        self._stop = anyio.Event()
        self._session: ClientSession | None = None
        self.protocol_version: str | None = None  # as negotiated; None until then
        self._turn = anyio.Lock()
        self._log_turn = anyio.Lock()
        self._log_sink: LogSink | None = None
        self._pushed = False
        self._held: PushedAsk | None = None  # where the request out now sends what the server pushes
        self._held_scope: anyio.CancelScope | None = None
        self._asking = 0  # pushed requests waiting for an answer right now
        self._http: httpx2.AsyncClient | None = None
        self.tool_names: frozenset[str] = frozenset()
        self.tools: dict[str, ListedTool] = {}  # as listed; trust is decided elsewhere
        # The SDK turns an HTTP refusal into a generic JSON-RPC error; the status says why.
        self._http_status: int | None = None
        self._challenge: Challenge | None = None  # with a 401 or 403: what authorization the server wants
        self._listings: dict[Listing, tuple[float, list[dict[str, Any]]]] = {}
        self.requests_out = 0  # sent and not answered yet: an idle connection has none
        self.last_used = time.monotonic()
        self._exit_status: int | None = None  # a stdio server's, when it exited by itself

    def _server_exited(self, status: int) -> None:
        self._exit_status = status

    @property
    def ended(self) -> anyio.Event:
        """Set once the connection is closed or its server went away."""
        return self._stop

    @property
    def legacy_version(self) -> str | None:
        """The older protocol the server speaks (one without results that ask), or None."""
        return self.protocol_version if self.protocol_version not in (None, MODERN) else None

    @property
    def holding(self) -> bool:
        """Whether an older server's request is held open here while a person answers what it pushed."""
        return self._asking > 0

    @property
    def alive(self) -> bool:
        return self._session is not None and not self._stop.is_set()

    def close(self) -> None:
        self._stop.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, negotiate, list tools, report ready, then hold the connection until closed or dead.

        Raises:
            McpUnavailable: before ready, when the server cannot be started, reached or negotiated with.
        """
        ready = False
        try:
            async with AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(stack))
                watched = WatchedReadStream(read, on_end=self._stop.set)
                # Passing a callback is what makes the SDK advertise a capability.
                relays_sampling = SAMPLING in self.relayed
                session = await stack.enter_async_context(
                    ClientSession(
                        watched,
                        write,
                        read_timeout_seconds=self._request_timeout,
                        elicitation_callback=self._pushed_elicitation,
                        sampling_callback=self._pushed_sampling if relays_sampling else None,
                        list_roots_callback=self._roots_callback(),
                        logging_callback=self._on_log,
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                        **session_options(),
                    )
                )
                # An HTTP server is first reached by the handshake's first request, a stdio one has just
                # been started: this bounds the whole attempt.
                with anyio.fail_after(self._connect_timeout):
                    await self._negotiate(session, watched)
                self._session = session
                ready = True
                task_status.started()
                await self._stop.wait()
        except (OSError, MCPError, TimeoutError, httpx2.HTTPError, ValidationError, RuntimeError) as exc:
            self._ended(exc, ready)
        except BaseExceptionGroup as group:
            failures, rest = group.split(Exception)
            if rest is not None or failures is None:
                raise
            self._ended(failures, ready)
        finally:
            self._stop.set()
            self._session = None

    def _ended(self, exc: BaseException, ready: bool) -> None:
        # Before ready this is a failed start; after, the connection died and the pool replaces it.
        if not ready:
            self._refuse_unauthorized(connecting=True)
            status = self._http_status
            reason = f"HTTP {status}" if status is not None else _first(exc)
            if self._exit_status is not None:  # what it wrote to its stderr went to the console's
                reason = f"the server exited with status {self._exit_status} before it answered"
            elif status is None and isinstance(_leaf(exc), TimeoutError):
                reason = f"no answer within {self._connect_timeout:g} s (CONSOLE_CONNECT_TIMEOUT_SECONDS)"
            raise McpUnavailable(
                f"cannot connect to {self.endpoint.describe()}: {reason}", http_status=status
            ) from None
        logger.warning("connection to %s ended", self.endpoint.describe())

    def _transport(self, stack: AsyncExitStack) -> Any:
        handed = self._transports(self.endpoint) if self._transports is not None else None
        if handed is not None:
            return handed
        if self.endpoint.transport == "stdio":
            program, *args = self.endpoint.command
            return stdio_transport(
                program,
                args,
                dict(self.endpoint.env),
                limit=self.max_result_bytes,
                exited=self._server_exited,
            )
        transport: httpx2.AsyncBaseTransport | None = (
            public_only_transport() if self.endpoint.public_only else None
        )
        if self.endpoint.dpop_key:
            transport = DPoPTransport(transport or httpx2.AsyncHTTPTransport(), self.endpoint.dpop_key)
        headers = httpx2.Headers(dict(self.endpoint.headers))
        headers["accept-encoding"] = "identity"  # a compressed body could outgrow the limit in one read
        http = httpx2.AsyncClient(
            headers=headers,
            timeout=httpx2.Timeout(30, read=None if self.listening else self._request_timeout + 5),
            event_hooks={"response": [self._note_status, ReplyLimit(self.max_result_bytes)]},
            transport=transport,
        )
        stack.push_async_callback(http.aclose)
        self._http = http
        # ReplyLimit bounds each event; the SDK's own bound (1 MiB) would fail larger results as lost.
        return streamable_http_client(self.endpoint.url, http_client=http, max_sse_event_size=None)

    async def _note_status(self, response: httpx2.Response) -> None:
        self._http_status = response.status_code if response.status_code >= 400 else None
        challenge = challenge_of(response.status_code, response.headers.get("www-authenticate"))
        # While connecting, a refusal outlives the SDK's fallbacks after it (an older handshake that a
        # server may answer otherwise); once connected, each response speaks for its own request.
        if challenge is not None or self._session is not None:
            self._challenge = challenge

    def _refuse_unauthorized(self, *, connecting: bool = False) -> None:
        """Raise AuthorizationRequired when the request just refused (or, `connecting`, any request of the
        handshake) was refused for want of a token."""
        challenge = self._challenge
        if challenge is not None and (connecting or self._http_status == challenge.status):
            wants = "more scopes" if challenge.insufficient_scope else "authorization"
            raise AuthorizationRequired(
                f"{self.endpoint.describe()} wants {wants} (HTTP {challenge.status})", challenge
            ) from None

    async def _negotiate(self, session: ClientSession, watched: WatchedReadStream) -> None:
        # Unpinned, the SDK's own policy (what Client(mode="auto") runs): server/discover, and the older
        # initialize handshake unless the server showed it speaks 2026-07-28, with a second probe for
        # a slow server whose first answer came too late.
        pinned = self.endpoint.protocol
        if pinned is None:
            await negotiate_auto(session)
        else:
            await self._negotiate_pinned(session, pinned)
        self.protocol_version = session.protocol_version
        watched.modern = self.protocol_version == MODERN
        if self._http is not None and not watched.modern:
            # An older server answers a held request on the stream of its POST, silent while a person
            # decides: the console's own deadline bounds that wait, not the HTTP read timeout.
            self._http.timeout = httpx2.Timeout(30, read=None)
        # Listing once per connection primes the SDK's x-mcp-header and output-schema caches.
        listing = await session.list_tools()
        self._remember_tools(listing.tools)

    async def _negotiate_pinned(self, session: ClientSession, version: str) -> None:
        """Offer only `version`: server/discover for 2026-07-28, else the older initialize handshake."""
        try:
            if version == MODERN:
                await session.discover()
            else:
                await session.initialize()
        except (MCPError, RuntimeError) as exc:
            if self._http_status == 400:
                self._http_status = None  # the server's refusal of that version, which the reason names
            pinned = f"the server does not take MCP {version}, which its settings pin"
            raise RuntimeError(f"{pinned}: {_first(exc)}") from None

    async def _pushed_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        # Passing a callback is what makes the SDK advertise elicitation {form, url}. On 2026-07-28
        # questions arrive inside results and are parked; only an older server pushes one here, in
        # the middle of the one request its connection carries, which is held open while a person
        # answers.
        return await self._ask_pushed(ELICITATION, params, types.ElicitResult)

    async def _pushed_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        return await self._ask_pushed(SAMPLING, params, types.CreateMessageResult)

    def _roots_callback(self) -> Any:
        # Roots are offered when an admin set some or an agent behind the gateway answers for them;
        # otherwise not at all (the SDK advertises roots exactly when a callback is passed).
        return self._list_roots if self.roots or ROOTS in self.relayed else None

    async def _list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        """The connection's roots, whoever asks: an admin's, or on an agent's session connection
        (`Endpoint.session`) that agent's own; without any, an older server asking in the middle of a call
        asks that call's agent. Asked outside any call (as a server may right after connecting, or after
        being told they changed), a shared connection serves every agent, so only the admin's roots apply
        to it: without them, none."""
        self._roots_asks += 1
        self._roots_asked.set()
        if self.roots:
            return types.ListRootsResult.model_validate(roots_result(self.roots))
        if self._held is not None or (self.legacy_version is not None and self._turn.locked()):
            return await self._ask_pushed(ROOTS, None, types.ListRootsResult)
        return types.ListRootsResult(roots=[])

    async def change_roots(self, roots: tuple[Root, ...]) -> None:
        """The server's roots changed (an admin's, or the agent's of a session connection): answer with
        them from now on, and tell an older server
        (`notifications/roots/list_changed`; 2026-07-28 has no such notification, its servers ask within
        each request). A server that asked for roots before is given a moment to ask again, so that the
        request about to go out already runs under the new ones."""
        if roots == self.roots:
            return
        self.roots = roots
        session = self._session
        if session is None or self._stop.is_set() or self.legacy_version is None:
            return
        if self._roots_callback() is None:
            return
        self._roots_asked = anyio.Event()
        asked_before = self._roots_asks > 0
        with anyio.move_on_after(ROOTS_REASK_SECONDS):  # a server that reads nothing holds no one up
            try:
                await session.send_notification(types.RootsListChangedNotification())
            except (MCPError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return  # the connection is going away; its successor starts with the new roots
            if asked_before:
                await self._roots_asked.wait()

    async def _ask_pushed(
        self, method: str, params: types.RequestParams | None, result_type: type[PushedResult]
    ) -> PushedResult | types.ErrorData:
        """What the request out now answers to what the server pushed; without a taker, the server is told
        no and that request fails."""
        held = self._held
        if held is None:
            self._pushed = True
            return types.ErrorData(code=types.INVALID_REQUEST, message="this client answers asynchronously")
        self._hold(1)
        try:
            pushed = (
                {} if params is None else params.model_dump(by_alias=True, mode="json", exclude_none=True)
            )
            return result_type.model_validate(await held(method, pushed))
        except PushedRefused as refused:
            return types.ErrorData(code=types.INVALID_REQUEST, message=refused.message)
        except ValidationError:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the answer is not a valid result")
        finally:
            self._hold(-1)

    def _hold(self, change: int) -> None:
        # No deadline while a person is asked; the request timeout again once every answer went back.
        self._asking += change
        scope = self._held_scope
        if scope is not None:
            scope.deadline = math.inf if self._asking else anyio.current_time() + self._request_timeout

    async def _on_message(self, message: Any) -> None:
        # A 2025-11-25 server says a link's flow is done with notifications/elicitation/complete.
        if not isinstance(message, types.ElicitCompleteNotification):
            return
        held = self._held
        if held is not None:
            await held.link_completed(message.params.elicitation_id)
        if self._on_link_done is not None:  # a link the server required with -32042, in an earlier reply
            await self._on_link_done(self.endpoint, message.params.elicitation_id)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        sink = self._log_sink  # the one request that may hear logs now (see _send_logged)
        if sink is not None:
            await sink(params.level, params.data, params.logger)

    async def send(self, request: McpRequest) -> Reply:
        """Send one request and classify the reply.

        Raises:
            McpUnavailable: the connection was already gone; nothing was sent.
            McpLost: the connection broke or timed out while the request was out; outcome unknown.
            McpProtocolError: the server answered with a JSON-RPC error or an invalid result, or the
                request cannot be written as JSON (nothing was sent; the connection stays up).
        """
        _ensure_encodable(request)
        self.requests_out += 1
        try:
            return await self._send_one(request)
        finally:
            self.requests_out -= 1
            self.last_used = time.monotonic()

    async def _send_one(self, request: McpRequest) -> Reply:
        session = self._session
        if session is None or self._stop.is_set():
            raise McpUnavailable("connection closed before sending", rpc_code=types.CONNECTION_CLOSED)
        legacy = self.legacy_version
        if legacy is None:
            if request.on_log is not None:
                return await self._send_logged(session, request)
            return await self._send(session, request)
        try:
            with anyio.fail_after(LEGACY_TURN_SECONDS):
                await self._turn.acquire()
        except TimeoutError:
            raise McpUnavailable(f"the server (MCP {legacy}) is busy with another request") from None
        try:
            self._pushed = False
            self._log_sink = request.on_log
            try:
                reply = await self._send_held(session, request)
            except McpProtocolError:
                if self._pushed:
                    raise _pushed_question(legacy) from None
                raise
            if self._pushed:
                raise _pushed_question(legacy)
            return reply
        finally:
            self._log_sink = None
            self._turn.release()

    async def _send_held(self, session: ClientSession, request: McpRequest) -> Reply:
        """A request to an older server, held open while what it pushes is answered (`request.on_pushed`)."""
        if request.on_pushed is None:
            return await self._send(session, request)
        self._held = request.on_pushed
        with anyio.CancelScope(deadline=anyio.current_time() + self._request_timeout) as scope:
            self._held_scope = scope
            try:
                return await self._send(session, request, read_timeout=HELD_READ_TIMEOUT_SECONDS)
            finally:
                self._held, self._held_scope = None, None
        raise McpLost(f"Request {request.method!r} timed out", rpc_code=types.REQUEST_TIMEOUT)

    async def _send_logged(self, session: ClientSession, request: McpRequest) -> Reply:
        """On 2026-07-28 a request opts in to the server's logs (`_meta` log level); while it is out, no
        other opted-in request is, so every log notification heard is its own. A request whose logs only
        the call keeps takes its turn only when it is free; one whose logs someone follows waits a moment."""
        try:
            if request.wait_for_logs:
                with anyio.fail_after(LOG_TURN_SECONDS):
                    await self._log_turn.acquire()
            else:
                self._log_turn.acquire_nowait()
        except (TimeoutError, anyio.WouldBlock):
            return await self._send(session, replace(request, log_level=None, on_log=None))
        try:
            self._log_sink = request.on_log
            return await self._send(session, request)
        finally:
            self._log_sink = None
            self._log_turn.release()

    async def _send(
        self, session: ClientSession, request: McpRequest, *, read_timeout: float | None = None
    ) -> Reply:
        try:
            result = await _send(session, request, read_timeout)
        except MCPError as exc:
            self._refuse_unauthorized()
            if is_too_large(exc.code, exc.data):
                raise ResultTooLarge(exc.message, rpc_code=exc.code, data=exc.data) from None
            if exc.code in (types.CONNECTION_CLOSED, types.REQUEST_TIMEOUT):
                raise McpLost(exc.message, rpc_code=exc.code) from None
            message = told(exc.code, exc.message, request.method, self._http_status)
            raise McpProtocolError(message, rpc_code=exc.code, data=exc.data) from None
        except ValidationError as exc:
            raise McpProtocolError(invalid_result(request.method, exc)) from None
        except (RuntimeError, ValueError) as exc:
            raise McpProtocolError(f"invalid reply from server: {_first_line(exc)}") from None
        if isinstance(result, Task | Complete):
            return result
        if isinstance(result, CreatedTask):
            return task_of(result.model_dump(by_alias=True, mode="json"))
        if isinstance(result, types.InputRequiredResult):
            requests = {
                key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, value in (result.input_requests or {}).items()
            }
            return InputRequired(input_requests=requests, request_state=result.request_state)
        return Complete(result=result.model_dump(by_alias=True, mode="json", exclude_none=True))

    async def list_tools(self) -> list[dict[str, Any]]:
        """The server's tools, as it lists them."""
        session = self._session
        if session is None or self._stop.is_set():
            raise McpUnavailable("connection closed", rpc_code=types.CONNECTION_CLOSED)
        try:
            listing = await session.list_tools()
        except MCPError as exc:
            self._refuse_unauthorized()
            raise McpProtocolError(exc.message, rpc_code=exc.code, data=exc.data) from None
        self._remember_tools(listing.tools)
        return [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in listing.tools]

    async def listing(self, kind: Listing) -> list[dict[str, Any]]:
        """Everything the server lists of one kind, every page, as it sent them (nothing when it does not
        offer the kind); served from memory for `LISTING_SECONDS`.

        Raises:
            McpUnavailable: the connection is gone.  McpProtocolError: the server refused or answered badly.
        """
        kept = self._listings.get(kind)
        if kept is not None and time.monotonic() - kept[0] < LISTING_SECONDS:
            return kept[1]
        session = self._session
        if session is None or self._stop.is_set():
            raise McpUnavailable("connection closed", rpc_code=types.CONNECTION_CLOSED)
        try:
            items = await _every_page(session, kind) if _offers(session, kind) else []
        except McpProtocolError:
            self._refuse_unauthorized()
            raise
        if kind == "tools":
            self._remember_tools([types.Tool.model_validate(tool) for tool in items])
        self._listings[kind] = (time.monotonic(), items)
        return items

    def listen(self, wanted: types.SubscriptionFilter) -> AbstractAsyncContextManager[Subscription]:
        """A `subscriptions/listen` stream of the server's changes that `wanted` names (2026-07-28).

        Raises:
            McpUnavailable: the connection is gone.
            McpProtocolError: the server speaks an older protocol, where it tells of changes otherwise.
        """
        session = self._session
        if session is None or self._stop.is_set():
            raise McpUnavailable("connection closed", rpc_code=types.CONNECTION_CLOSED)
        if self.legacy_version is not None:
            raise McpProtocolError(
                f"the server speaks MCP {self.legacy_version}; the console hears of changes only from "
                f"servers that speak MCP {MODERN}",
                rpc_code=types.METHOD_NOT_FOUND,
            )
        return listen(
            session,
            tools_list_changed=bool(wanted.tools_list_changed),
            prompts_list_changed=bool(wanted.prompts_list_changed),
            resources_list_changed=bool(wanted.resources_list_changed),
            resource_subscriptions=wanted.resource_subscriptions or (),
        )

    def forget_listings(self) -> None:
        """The server said a listing changed: the next one is asked for again."""
        self._listings.clear()

    async def complete(self, params: types.CompleteRequestParams) -> dict[str, Any]:
        """The server's completions for one argument (a helper for people typing, with no effects, so it
        is asked directly rather than as a call).

        Raises:
            McpUnavailable: the connection is gone, or the server offers no completions.
            McpProtocolError: the server refused or answered badly.
        """
        session = self._session
        if session is None or self._stop.is_set():
            raise McpUnavailable("connection closed", rpc_code=types.CONNECTION_CLOSED)
        offered = session.server_capabilities
        if offered is None or offered.completions is None:
            raise McpProtocolError("the server offers no completions", rpc_code=types.METHOD_NOT_FOUND)
        context = params.context.arguments if params.context is not None else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        try:
            result = await session.complete(params.ref, argument, context)
        except MCPError as exc:
            raise McpProtocolError(exc.message, rpc_code=exc.code, data=exc.data) from None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    def _remember_tools(self, tools: list[types.Tool]) -> None:
        self.tool_names = frozenset(tool.name for tool in tools)
        self.tools = {tool.name: ListedTool.of(tool) for tool in tools}


@dataclass(frozen=True)
class ListedTool:
    """What the server listed of one tool (untrusted text, shown escaped; annotations trusted only when an
    admin trusts the server)."""

    annotations: dict[str, Any] | None
    description: str | None
    input_schema: dict[str, Any]
    title: str | None = None  # the tool's display name (its own, else its annotations')

    @classmethod
    def of(cls, tool: types.Tool) -> ListedTool:
        listed = tool.annotations
        annotations = (
            None if listed is None else listed.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
        title = tool.title or (listed.title if listed is not None else None)
        return cls(annotations, tool.description, dict(tool.input_schema), title)


_PROMPT_RESULT = TypeAdapter(types.GetPromptResult | types.InputRequiredResult)
_RESOURCE_RESULT = TypeAdapter(types.ReadResourceResult | types.InputRequiredResult)


async def _send(session: ClientSession, request: McpRequest, read_timeout: float | None) -> Any:
    params = request.params
    responses = _typed_responses(request.input_responses)
    state = request.request_state
    progress = request.on_progress
    meta: Any = dict(request.meta or {})
    if request.log_level is not None:
        meta[types.LOG_LEVEL_META_KEY] = request.log_level
    meta = meta or None
    if request.method in TASK_METHODS:
        return await send_task_request(session, request.method, params, read_timeout)
    if request.method == "tools/call":
        return await session.call_tool(
            params["name"],
            params.get("arguments"),
            read_timeout,
            progress_callback=progress,
            input_responses=responses,
            request_state=state,
            meta=meta,
            allow_input_required=True,
            allow_claimed=True,
        )
    # The session's prompt and resource helpers take no read timeout, so these are sent as they send them.
    if request.method == "prompts/get":
        prompt = types.GetPromptRequestParams(
            name=params["name"],
            arguments=params.get("arguments"),
            input_responses=responses,
            request_state=state,
            _meta=meta,
        )
        return await session.send_request(
            types.GetPromptRequest(params=prompt), _PROMPT_RESULT, request_read_timeout_seconds=read_timeout
        )
    if request.method == "resources/read":
        resource = types.ReadResourceRequestParams(
            uri=params["uri"], input_responses=responses, request_state=state, _meta=meta
        )
        return await session.send_request(
            types.ReadResourceRequest(params=resource),
            _RESOURCE_RESULT,
            request_read_timeout_seconds=read_timeout,
        )
    raise ValueError(f"unsupported method {request.method}")


def _offers(session: ClientSession, kind: Listing) -> bool:
    capabilities = session.server_capabilities
    if capabilities is None:
        return False
    if kind == "tools":
        return capabilities.tools is not None
    if kind == "prompts":
        return capabilities.prompts is not None
    return capabilities.resources is not None


async def _every_page(session: ClientSession, kind: Listing) -> list[dict[str, Any]]:
    listers = {
        "tools": session.list_tools,
        "prompts": session.list_prompts,
        "resources": session.list_resources,
        "resourceTemplates": session.list_resource_templates,
    }
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        for _ in range(LISTING_PAGES):
            params = None if cursor is None else types.PaginatedRequestParams(cursor=cursor)
            page = (await listers[kind](params=params)).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
            items.extend(page.get(kind, []))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str):
                break
    except MCPError as exc:
        raise McpProtocolError(exc.message, rpc_code=exc.code, data=exc.data) from None
    except (ValidationError, RuntimeError, ValueError) as exc:
        raise McpProtocolError(f"invalid listing from server: {_first_line(exc)}") from None
    return items


def _pushed_question(version: str) -> McpProtocolError:
    return McpProtocolError(PUSHED_QUESTION.format(version=version), rpc_code=types.INVALID_REQUEST)


def _ensure_encodable(request: McpRequest) -> None:
    # The SDK serialises in the transport's writer task, where a failure ends the connection for every
    # caller; a request that cannot become UTF-8 JSON (a lone surrogate, runaway nesting) stops here.
    try:
        json.dumps(
            [request.params, request.input_responses, request.request_state], ensure_ascii=False
        ).encode()
    except (UnicodeEncodeError, RecursionError, ValueError) as exc:
        raise McpProtocolError(f"the request cannot be sent as JSON: {_first_line(exc)}") from None


def _typed_responses(responses: dict[str, dict[str, Any]] | None) -> types.InputResponses | None:
    if responses is None:
        return None
    return {key: _typed_response(value) for key, value in responses.items()}


def _typed_response(value: dict[str, Any]) -> types.InputResponse:
    """An answer as the SDK sends it: a person's ElicitResult, or what an agent's client answered."""
    if "roots" in value:
        return types.ListRootsResult.model_validate(value)
    if "role" in value and "content" in value:
        return types.CreateMessageResult.model_validate(value)
    return types.ElicitResult.model_validate(value)


def _first(exc: BaseException) -> str:
    return _first_line(_leaf(exc))


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
