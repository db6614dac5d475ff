"""Nothing runs after the agent was told it did not: when a request that drives a console call ends in an
error the agent is sent, or the agent cancels it (2025-11-25 `notifications/cancelled` or the end of its
session, or a 2026-07-28 request whose HTTP exchange ends before its answer), or a 2025-11-25 agent's
connection closed before the answer and it did not come back (`attendance.py`), the call it drove is withdrawn
(`calls.withdrawal`), so a person answering its question later cannot make the tool run.

Runs as the SDK's server middleware, outside the handler, so an error raised while the SDK shapes the
handler's result for the wire counts too.
"""

from __future__ import annotations

import logging

import anyio
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult

from console.calls.withdrawal import CANCELLED, left_reason, told_failed, withdraw_for_agent
from console.gateway import context
from console.gateway.attendance import Exchange
from console.gateway.context import Context
from console.gateway.driven import noting
from console.gateway.forwarding import AWAIT_TOOL
from console.transactions import transaction

logger = logging.getLogger(__name__)

DRIVING = frozenset({"tools/call", "prompts/get", "resources/read"})
WITHDRAW_SECONDS = 10.0  # bound on withdrawing while the request is being cancelled


async def withdraw_on_failure(ctx: Context, call_next: CallNext) -> HandlerResult:
    """The server middleware: the request served; its calls withdrawn if the agent is told it failed."""
    if ctx.method not in DRIVING:
        return await call_next(ctx)
    with noting() as calls:
        try:
            return await _served_while_watched(ctx, call_next, calls)
        except anyio.get_cancelled_exc_class():
            if _cancelled_by_agent(ctx):
                await _withdraw(ctx, calls, CANCELLED)
            raise
        except MCPError as exc:
            if not _still_waits(exc):
                await _withdraw(ctx, calls, told_failed(exc.error.message))
            raise
        except Exception as exc:  # the SDK answers it as an internal error
            await _withdraw(ctx, calls, told_failed(type(exc).__name__))
            raise


async def _served_while_watched(ctx: Context, call_next: CallNext, calls: list[str]) -> HandlerResult:
    """The request served; meanwhile, once its agent left it (`attendance.py`), its calls withdrawn.
    The SDK keeps serving a 2025-11-25 request after its HTTP exchange ended, and the agent is told
    nothing more: what it would have been told goes to the session's event store for a resumption. A
    result ready while the agent is away (the hold bound passed) waits with it until it is back or its
    calls were withdrawn, so leaving just before the bound leaves nothing open either. A busy console
    may note a call only after the agent was found gone: once the result is ready, the calls are
    withdrawn again (a call that ended already stays as it is)."""
    exchange = context.exchange(ctx)
    if exchange is None:
        return await call_next(ctx)
    grace = context.services(ctx).settings.gateway_return_seconds
    withdrawn = anyio.Event()
    failure: BaseException | None = None
    async with anyio.create_task_group() as watching:
        watching.start_soon(_withdraw_once_left, ctx, exchange, calls, grace, withdrawn)
        try:
            result = await call_next(ctx)
            if exchange.ended.is_set():
                await _until_back_or(exchange, withdrawn)
                if withdrawn.is_set():  # a call begun after the agent was found gone is withdrawn too
                    await _withdraw(ctx, calls, left_reason(grace))
        except BaseException as exc:  # raised below, not wrapped in the task group's exception group
            failure = exc
        watching.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def _withdraw_once_left(
    ctx: Context, exchange: Exchange, calls: list[str], grace: float, withdrawn: anyio.Event
) -> None:
    await exchange.ended.wait()
    await exchange.attendance.unattended_for(grace)
    await _withdraw(ctx, calls, left_reason(grace))
    withdrawn.set()


async def _until_back_or(exchange: Exchange, withdrawn: anyio.Event) -> None:
    """Return once the agent came back after its exchange ended, or `withdrawn` is set."""
    async with anyio.create_task_group() as either:

        async def back() -> None:
            await exchange.attendance.attended_after(exchange.left_at)
            either.cancel_scope.cancel()

        either.start_soon(back)
        await withdrawn.wait()
        either.cancel_scope.cancel()


def _still_waits(exc: MCPError) -> bool:
    """The error that tells the agent a prompt or resource read still waits, and how to wait again."""
    data = exc.error.data
    return isinstance(data, dict) and data.get("await_tool") == AWAIT_TOOL


def _cancelled_by_agent(ctx: Context) -> bool:
    """A request is cancelled by its agent (a 2025-11-25 `notifications/cancelled` or the end of its
    session; the end of a 2026-07-28 request's HTTP exchange) unless the console is stopping: then the
    call lives on, for the agent to follow again (`console__await`) once the console is back."""
    return not context.console_stopping(ctx)


async def _withdraw(ctx: Context, calls: list[str], reason: str) -> None:
    if not calls:
        return
    services, principal = context.services(ctx), context.caller(ctx)
    with anyio.CancelScope(shield=True), anyio.move_on_after(WITHDRAW_SECONDS):
        for call_id in calls:
            try:
                async with transaction(services.factory) as session:
                    await withdraw_for_agent(
                        session=session, principal=principal, call_id=call_id, reason=reason
                    )
            except Exception:  # the agent's answer goes out regardless; the call stays as it was
                logger.exception("could not withdraw call %s after %s", call_id, reason)
