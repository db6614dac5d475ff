"""Starting a call for an agent and following it: the one path the agent API and the MCP gateway share."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls import service as calls
from console.calls.states import CallStatus, JobKind
from console.config import Settings
from console.dispatch.signals import Signals
from console.dispatch.worker import Claimed, Dispatcher
from console.identity import Principal, Viewer
from console.identity.idempotency import Keyed
from console.mcp.pool import ConnectionPool
from console.transactions import commit

DB_POLL_SECONDS = 0.25  # how soon a change made by another process is seen when signals do not cross
SAFETY_NET_SECONDS = 2.0  # when they do (PostgreSQL): a wake-up was lost while a connection was down


@dataclass
class Started:
    call_id: str
    marker: anyio.Event  # taken while the call was surely still running: wait on it first
    _send: Callable[[], None] | None = None

    def send(self) -> None:
        """Give the first send to whoever sends it (once; later calls do nothing)."""
        send, self._send = self._send, None
        if send is not None:
            send()


async def start_and_hand_over(
    *,
    session: AsyncSession,
    principal: Principal,
    settings: Settings,
    pool: ConnectionPool | None,
    signals: Signals,
    dispatcher: Dispatcher | None,
    run_id: str,
    body_text: str,
    relayed: frozenset[str] = frozenset(),
    defer_send: bool = False,
    idempotency: Keyed | None = None,
    tools_within: float = math.inf,
    gateway_session: str | None = None,
) -> Started:
    """Record the call (`start_call`) and give its first send to this process's dispatcher
    when it runs here, else wake whichever dispatcher polls.

    With `defer_send`, that happens when the caller calls `Started.send()` (after registering for the
    call's progress and logs, which are settled when the request goes out); the caller must call it, in
    a `finally`, or the call ends interrupted once its lease runs out. `tools_within` bounds the wait for
    a server with no live connection to list its tools (see `start_call`).

    Raises:
        what `start_call` raises.
    """
    here = dispatcher if dispatcher is not None and dispatcher.accepting else None
    started = await start_call(
        session=session,
        principal=principal,
        settings=settings,
        pool=pool,
        run_id=run_id,
        body_text=body_text,
        claimed_by=None if here is None else here.worker_id,
        relayed=relayed,
        idempotency=idempotency,
        gateway_session=gateway_session,
        tools_within=tools_within,
    )
    call_id = started.call.id
    marker = signals.call_marker(call_id)
    if started.job_id is None:  # it waits at its gate: nothing to send yet
        signals.call_changed(call_id)
        return Started(call_id, marker)
    job_id, send = started.job_id, started.send
    if here is not None and send is not None:
        outcome = Started(
            call_id, marker, lambda: here.hand_over(Claimed(job_id, call_id, JobKind.INITIAL, send))
        )
    else:
        outcome = Started(call_id, marker, signals.work_available)
    if not defer_send:
        outcome.send()
    return outcome


async def start_call(
    *,
    session: AsyncSession,
    principal: Principal,
    settings: Settings,
    pool: ConnectionPool | None,
    run_id: str,
    body_text: str,
    claimed_by: str | None = None,
    relayed: frozenset[str] = frozenset(),
    idempotency: Keyed | None = None,
    tools_within: float = math.inf,
    gateway_session: str | None = None,
) -> calls.StartedCall:
    """Check the call and record it (`calls.service.check_call`, then `record_call`), and commit: its
    first send goes out only after that.

    With a `pool`, a tool the server does not list, or arguments its inputSchema refuses, are refused
    before anything is recorded. A server with no live connection is given `tools_within` seconds
    (besides the connect timeout) to list its tools, with no transaction open meanwhile: what the check
    wrote (a refreshed token) commits before; after that the call is recorded unchecked and the
    dispatcher checks its arguments before the first send. The other arguments are `record_call`'s.

    Raises:
        what `check_call`, `listed_tool` and `record_call` raise.
    """
    checked = await calls.check_call(
        session=session, principal=principal, settings=settings, run_id=run_id, body_text=body_text
    )
    listed = None
    if pool is not None and checked.tool is not None:
        listed = pool.known_tool(checked.endpoint, checked.tool)
        if listed is None:
            await commit(session)  # asking the server may start it: hold no transaction meanwhile
            listed = await calls.listed_tool(pool, checked, tools_within)
    started = await calls.record_call(
        session=session,
        principal=principal,
        settings=settings,
        checked=checked,
        listed=listed,
        claimed_by=claimed_by,
        relayed=relayed,
        idempotency=idempotency,
        gateway_session=gateway_session,
    )
    await commit(session)
    return started


async def follow_call(
    *,
    session: AsyncSession,
    viewer: Viewer,
    signals: Signals,
    call_id: str,
    wait: float,
    settled: Callable[[str, int], bool],
    unsettled_since: anyio.Event | None = None,
    seen: Seen | None = None,
) -> calls.CallView:
    """The call once `settled(status, round)` holds, or as it is when `wait` seconds ran out.

    No transaction stays open while waiting; changes wake it at once when signals reach it (always from
    this process, on PostgreSQL from every process), others within `DB_POLL_SECONDS`. With
    `unsettled_since`, the first read waits for a change after that marker; with `seen`, the caller's own
    read stands for the first.
    """
    poll = SAFETY_NET_SECONDS if signals.crosses_processes else DB_POLL_SECONDS
    marker = unsettled_since
    view: calls.CallView | None = None
    with anyio.move_on_after(wait):
        if marker is not None:
            await signals.wait_for_call(call_id, poll, since=marker)
            view = _left_settled(signals, marker, viewer, settled)
        while view is None and not signals.stopping:
            if seen is None:
                seen = await look(session=session, viewer=viewer, signals=signals, call_id=call_id)
            marker, current = seen.marker, seen.view
            seen = None
            if settled(current.call.status, current.call.round):
                view = current
                break
            await signals.wait_for_call(call_id, poll, since=marker)
            view = _left_settled(signals, marker, viewer, settled)
    if marker is not None:
        signals.drop_call_marker(call_id, marker)
    if view is not None:
        return view
    with anyio.CancelScope(shield=True):
        latest = await calls.view_call(session=session, viewer=viewer, call_id=call_id)
    return latest


@dataclass(frozen=True)
class Seen:
    """A read of the call and the marker taken before it (`Signals.call_marker`)."""

    marker: anyio.Event
    view: calls.CallView


async def look(*, session: AsyncSession, viewer: Viewer, signals: Signals, call_id: str) -> Seen:
    """The call as it is now, and a marker a change after this read sets (`follow_call(seen=…)`)."""
    marker = signals.call_marker(call_id)  # before reading: a change meanwhile still sets it
    try:
        with anyio.CancelScope(shield=True):  # never abandon a SQLite transaction half-way
            view = await calls.view_call(session=session, viewer=viewer, call_id=call_id)
    except BaseException:
        signals.drop_call_marker(call_id, marker)
        raise
    return Seen(marker, view)


def _left_settled(
    signals: Signals, marker: anyio.Event, viewer: Viewer, settled: Callable[[str, int], bool]
) -> calls.CallView | None:
    """The call as this process's dispatcher recorded it (ended, or asking its questions) when that
    woke us, if that settles it: no need to read it again."""
    left = signals.left_by(marker)
    if (
        isinstance(left, calls.CallView)
        and viewer.sees_run(left.team_id, left.owner_id)
        and settled(left.call.status, left.call.round)
    ):
        return left
    return None


def left_running(status: str, _round: int) -> bool:
    """Settled once the server has answered: the call finished or asks something."""
    return status not in (CallStatus.RUNNING, CallStatus.RESUMING)
