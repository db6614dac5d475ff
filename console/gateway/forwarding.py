"""An agent's request as a console call: recorded, sent, and held open while people decide, up to a bound.

The hold costs no transaction and no upstream connection: it follows the call's rows (woken at once by
this process's changes), so a restart loses only the agent's open HTTP request, never the call.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import ExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls import service as calls
from console.calls.agent_runs import run_for_agent
from console.calls.models import AgentRequest
from console.calls.questions.agent_answers import pending_agent_requests
from console.calls.questions.waiting import Waiting, waiting_on
from console.calls.states import CallStatus
from console.config import Settings
from console.dispatch import follow
from console.dispatch.signals import LogFollower, Signals
from console.dispatch.worker import Dispatcher
from console.gateway.driven import driving
from console.gateway.events import RETRY_MS
from console.gateway.memo import Memo
from console.gateway.request_state import StateSeal
from console.identity import Principal
from console.mcp.pool import ConnectionPool
from console.runtime import Runtime
from console.transactions import commit, transaction

HEARTBEAT_SECONDS = 15.0  # how often a held request hears that it still waits
NOTICE_BUFFER = 64  # the server's progress and log notifications waiting for a slow agent
AWAIT_TOOL = "console__await"
WAITING_META = "io.approval-console/waiting"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
GATE_META = "io.approval-console/gate"  # a call stopped at its approval gate: who decided, and why
Report = Callable[[float, float | None, str | None], Awaitable[None]]
# Ends the agent's response stream for its client to resume it (2025-11-25 sessions only).
CloseStream = Callable[[], Awaitable[None]]
# Given the open questions and what waits for the agent: True to return now (the agent takes them).
Stop = Callable[[list[Waiting], list[AgentRequest]], bool]


@dataclass(frozen=True)
class Services:
    factory: async_sessionmaker[AsyncSession]
    pool: ConnectionPool
    signals: Signals
    dispatcher: Dispatcher | None
    settings: Settings
    memo: Memo
    seal: StateSeal

    @classmethod
    def of(cls, runtime: Runtime, *, memo: Memo, seal: StateSeal) -> Services:
        """The console's runtime as the gateway's handlers use it, with the gateway's own memo and seal."""
        return cls(
            runtime.factory, runtime.pool, runtime.signals, runtime.dispatcher, runtime.settings, memo, seal
        )


@dataclass(frozen=True)
class RunKey:
    """Which run the request is filed under, and how that run is called when it is opened."""

    key: str
    title: str
    agent: str


@dataclass(frozen=True)
class Outcome:
    view: calls.CallView
    waiting: list[Waiting]  # empty once the call ended
    asks: list[AgentRequest] = field(default_factory=list)  # the server's requests for the agent

    @property
    def ended(self) -> bool:
        return calls.is_terminal(self.view.call.status)


async def forward(
    *,
    services: Services,
    principal: Principal,
    run: RunKey,
    server: str,
    method: str,
    params: dict[str, Any],
    report: Report,
    stop: Stop | None = None,
    bound: float | None = None,
    relayed: frozenset[str] = frozenset(),
    logs: LogFollower | None = None,
    close_stream: CloseStream | None = None,
    gateway_session: str | None = None,
) -> Outcome:
    """Start the call in the agent's run and hold it until it ends, `stop` says so, or the hold bound
    (`bound` seconds, else `CONSOLE_GATEWAY_HOLD_SECONDS`) passes.

    Raises:
        ConsoleError: the call could not be started (unknown tool, read-only caller, bad params ...).
    """
    body = json.dumps({"server": server, "method": method, "params": params}, ensure_ascii=False)
    async with transaction(services.factory) as session:
        run_id = services.memo.runs.get((principal.user_id, run.key))
        if run_id is None:
            owned = await run_for_agent(
                session=session, principal=principal, key=run.key, title=run.title, agent=run.agent
            )
            await commit(session)  # the agent's run stays, whatever becomes of this call
            run_id = owned.id
            services.memo.runs.put((principal.user_id, run.key), run_id)
        # Not cancelled half-way: a call that was recorded is one the agent's cancellation can withdraw.
        with anyio.CancelScope(shield=True):
            started = await follow.start_and_hand_over(
                session=session,
                principal=principal,
                settings=services.settings,
                pool=services.pool,
                signals=services.signals,
                dispatcher=services.dispatcher,
                run_id=run_id,
                body_text=body,
                relayed=relayed,
                gateway_session=gateway_session,
                defer_send=True,
            )
            driving(started.call_id)
    try:
        return await hold(
            services=services,
            principal=principal,
            call_id=started.call_id,
            report=report,
            since=started.marker,
            stop=stop,
            bound=bound,
            logs=logs,
            close_stream=close_stream,
            following=started.send,
        )
    finally:
        started.send()  # once the hold follows the call; here if it ended before it could


async def hold(
    *,
    services: Services,
    principal: Principal,
    call_id: str,
    report: Report,
    since: anyio.Event | None = None,
    stop: Stop | None = None,
    bound: float | None = None,
    logs: LogFollower | None = None,
    close_stream: CloseStream | None = None,
    following: Callable[[], None] | None = None,
) -> Outcome:
    """The call once it ended, or as it stands when `stop` holds for its open questions or
    `CONSOLE_GATEWAY_HOLD_SECONDS` passed; meanwhile a progress notification on each change and every
    `HEARTBEAT_SECONDS` names who must answer, and with `CONSOLE_GATEWAY_POLL_SECONDS` the agent's stream
    is closed for its client to resume (`close_stream`). `following` is called once the call's progress
    and logs are followed (it sends the call).

    Raises:
        NotFound: the caller may not see the call.
    """
    bound = services.settings.gateway_hold_seconds if bound is None else bound
    report = Monotonic(report)
    poll = services.settings.gateway_poll_seconds
    polling = Polling(close_stream, poll) if close_stream is not None and poll is not None else None
    async with _relaying(services.signals, call_id, report, logs):
        if following is not None:  # the call's progress and logs now reach the agent
            following()
        return await _hold(services, principal, call_id, report, since, stop, bound, polling)


async def _hold(
    services: Services,
    principal: Principal,
    call_id: str,
    report: Report,
    since: anyio.Event | None,
    stop: Stop | None,
    bound: float,
    polling: Polling | None,
) -> Outcome:
    start = time.monotonic()
    marker = since
    told: tuple[str, int, str] | None = None
    told_at = start
    while True:
        left = bound - (time.monotonic() - start)
        if polling is not None:
            left = min(left, await polling.next_close())
        async with transaction(services.factory) as session:  # a refusal commits its record
            view = await follow.follow_call(
                session=session,
                viewer=principal.viewer,
                signals=services.signals,
                call_id=call_id,
                wait=max(0.0, min(left, HEARTBEAT_SECONDS)),
                settled=_changed_since(told),
                unsettled_since=marker,
            )
            marker = None
            if calls.is_terminal(view.call.status):
                return Outcome(view, [])
            asking = view.call.status == CallStatus.AWAITING_INPUT
            waiting = await waiting_on(session=session, call_id=call_id) if view.pending else []
            asks = await pending_agent_requests(session=session, call_id=call_id) if asking else []
        if stop is not None and (waiting or asks) and stop(waiting, asks):
            return Outcome(view, waiting, asks)
        now = time.monotonic()
        elapsed = now - start
        message = waiting_message(waiting, services.settings.base_url, asks)
        telling = (view.call.status, view.call.round, message)
        if telling != told or now - told_at >= HEARTBEAT_SECONDS:  # not when woken only to close
            await report(round(elapsed, 1), float(bound), message)
            told, told_at = telling, now
        if elapsed >= bound or services.signals.stopping:  # stopping: the agent hears where things stand
            return Outcome(view, waiting, asks)


class Polling:
    """SEP-1699 polling of a 2025-11-25 agent's held request: its response stream is closed `poll` seconds
    after the hold began and again while it waits, never sooner than the client comes back (the `retry`
    its stream was told), and the client resumes it with `Last-Event-ID`; what was said meanwhile is
    replayed from the gateway's event store. Nothing of the call depends on the stream."""

    def __init__(self, close_stream: CloseStream, poll: float) -> None:
        self._close_stream = close_stream
        self._every = max(poll, RETRY_MS / 1000)
        self._due = time.monotonic() + poll

    async def next_close(self) -> float:
        """Close the stream if its time has come; the seconds until the next close."""
        now = time.monotonic()
        if now >= self._due:
            await self._close_stream()
            self._due = now + self._every
        return self._due - now


class Monotonic:
    """One progress stream for the agent from two sources, the server's own notifications and the
    console's while people decide. The protocol wants the values to increase: one at or below the last
    is sent just above it, without a total."""

    def __init__(self, report: Report) -> None:
        self._report = report
        self._last: float | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self._last is not None and progress <= self._last:
            progress, total = round(self._last + 0.1, 1), None
        self._last = progress
        await self._report(progress, total, message)


@asynccontextmanager
async def _relaying(
    signals: Signals, call_id: str, report: Report, logs: LogFollower | None
) -> AsyncIterator[None]:
    """While held, the server's progress for the call, and its logs when the agent asked for them, reach
    the agent (when this process sends the call). A slow agent misses some: they wait in a bounded
    buffer, so the server's session never waits for the agent."""
    send, receive = anyio.create_memory_object_stream[Callable[[], Awaitable[None]]](NOTICE_BUFFER)

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        with suppress(anyio.WouldBlock):
            send.send_nowait(lambda: report(progress, total, message))

    async def log(level: str, data: Any, logger: str | None) -> None:
        if logs is not None:
            with suppress(anyio.WouldBlock):
                send.send_nowait(lambda: logs.sink(level, data, logger))

    async def relay() -> None:
        async for notice in receive:
            await notice()

    with send, receive:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(relay)
            with ExitStack() as following:
                following.enter_context(signals.following_progress(call_id, progress))
                if logs is not None:
                    following.enter_context(signals.following_logs(call_id, LogFollower(logs.level, log)))
                yield
            tasks.cancel_scope.cancel()


def _changed_since(told: tuple[str, int, str] | None) -> Callable[[str, int], bool]:
    """Settled once the call ended, or (after the first look) once its status or round changed."""

    def settled(status: str, round_: int) -> bool:
        if calls.is_terminal(status):
            return True
        return told is None or (status, round_) != told[:2]

    return settled


def waiting_message(waiting: list[Waiting], base_url: str, asks: list[AgentRequest] | None = None) -> str:
    """What the call waits for, with where each question is answered."""
    if asks:
        methods = ", ".join(sorted({ask.method for ask in asks}))
        return f"Waiting for the agent to answer the server's {methods} request."
    if not waiting:
        return "The MCP server is working on the request."
    lines = [
        f'"{q.message[:200]}": waits for {q.who}'
        + (f" ({q.approvals} of {q.required_approvals} approvals)" if q.required_approvals > 1 else "")
        + f" at {base_url}{q.path()}"
        for q in waiting
    ]
    return "Waiting for a person to decide: " + "; ".join(lines) + "."


def tool_result(outcome: Outcome, base_url: str) -> dict[str, Any]:
    """The tools/call result the agent gets: the server's own once the call completed.

    Raises:
        MCPError: the call failed (the server's JSON-RPC error, as it sent it) or ended without a result.
    """
    if not outcome.ended:
        return still_waiting(outcome, base_url)
    return _result_or_raise(outcome.view)


def method_result(outcome: Outcome, base_url: str) -> dict[str, Any]:
    """The prompts/get or resources/read result; a request that still waits is an error naming the call.

    Raises:
        MCPError.
    """
    if not outcome.ended:
        text = _still_waiting_text(outcome, base_url)
        raise MCPError(
            types.REQUEST_TIMEOUT, text, {"call_id": outcome.view.call.id, "await_tool": AWAIT_TOOL}
        )
    return _result_or_raise(outcome.view)


def still_waiting(outcome: Outcome, base_url: str) -> dict[str, Any]:
    """A tool result saying that the call still waits, for whom, and how to wait again."""
    return {
        "content": [{"type": "text", "text": _still_waiting_text(outcome, base_url)}],
        "isError": True,  # not the tool's result: a client must not check it against the tool's output schema
        "_meta": {WAITING_META: waiting_meta(outcome, base_url)},
    }


def waiting_meta(outcome: Outcome, base_url: str) -> dict[str, Any]:
    """The same in a form a program reads: the call, the tool that waits again, each open question."""
    questions = [{"id": q.id, "url": base_url + q.path(), "waits_for": q.who} for q in outcome.waiting]
    return {"call_id": outcome.view.call.id, "await_tool": AWAIT_TOOL, "questions": questions}


def _still_waiting_text(outcome: Outcome, base_url: str) -> str:
    call = outcome.view.call
    return (
        f"{waiting_message(outcome.waiting, base_url, outcome.asks)} Nothing is lost: the decision "
        f"resumes the call (console call {call.id}). To wait for it again, call the tool {AWAIT_TOOL} with "
        f'{{"call_id": "{call.id}"}}.'
    )


def as_ours(result: dict[str, Any]) -> dict[str, Any]:
    """The server's result as the console answers it: the agent's server is the console, so the SDK
    stamps the console's serverInfo instead of the upstream's."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or SERVER_INFO not in meta:
        return result
    rest = {key: value for key, value in meta.items() if key != SERVER_INFO}
    return {**{k: v for k, v in result.items() if k != "_meta"}, **({"_meta": rest} if rest else {})}


def _result_or_raise(view: calls.CallView) -> dict[str, Any]:
    call = view.call
    if call.status == CallStatus.COMPLETED and call.result_json is not None:
        result = json.loads(call.result_json)
        if isinstance(result, dict):
            return as_ours(result)
    error = json.loads(call.error_json) if call.error_json else {}
    message = str(error.get("message") or f"the call ended {call.status}")
    if error.get("at_gate") and call.method == "tools/call":
        # A tool result, not a protocol error: the model reads who stopped the call and why, and re-plans.
        return {"content": [{"type": "text", "text": message}], "isError": True, "_meta": {GATE_META: error}}
    code = error.get("code")
    if call.status == CallStatus.FAILED and isinstance(code, int):
        raise MCPError(code, message, error.get("data"))  # the server's own error, as it sent it
    hint = " A person can send it again from the run page." if call.status == CallStatus.INTERRUPTED else ""
    raise MCPError(types.INTERNAL_ERROR, f"{message} (console call {call.id}, {call.status}).{hint}")
