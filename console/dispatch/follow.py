"""Starting a call for an agent and following it: the one path the agent API and the MCP gateway share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls import service as calls
from console.config import Settings
from console.dispatch.signals import Signals
from console.dispatch.worker import Claimed, Dispatcher
from console.identity import Principal, Viewer
from console.mcp.pool import ConnectionPool

DB_POLL_SECONDS = 0.25  # the safety net for changes made by another process, which signals never see


@dataclass(frozen=True)
class Started:
    call_id: str
    marker: anyio.Event  # taken while the call was surely still running: wait on it first


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
) -> Started:
    """Record the call (`calls.service.start_call`) and give its first send to this process's dispatcher
    when it runs here, else wake whichever dispatcher polls.

    Raises:
        what `start_call` raises.
    """
    here = dispatcher if dispatcher is not None and dispatcher.accepting else None
    started = await calls.start_call(
        session=session,
        principal=principal,
        settings=settings,
        pool=pool,
        run_id=run_id,
        body_text=body_text,
        claimed_by=None if here is None else here.worker_id,
        relayed=relayed,
    )
    call_id = started.call.id
    marker = signals.call_marker(call_id)
    if started.job_id is None:  # it waits at its gate: nothing to send yet
        signals.call_changed(call_id)
    elif here is None:
        signals.work_available()
    else:
        here.hand_over(Claimed(started.job_id, call_id))
    return Started(call_id, marker)


async def follow_call(
    *,
    session: AsyncSession,
    viewer: Viewer,
    signals: Signals,
    call_id: str,
    wait: float,
    settled: Callable[[str, int], bool],
    unsettled_since: anyio.Event | None = None,
) -> calls.CallView:
    """The call once `settled(status, round)` holds, or as it is when `wait` seconds ran out.

    No transaction stays open while waiting; in-process changes wake it at once, others within
    `DB_POLL_SECONDS`. With `unsettled_since`, the first read waits for a change after that marker.
    """
    marker = unsettled_since
    view: calls.CallView | None = None
    with anyio.move_on_after(wait):
        if marker is not None:
            await signals.wait_for_call(call_id, DB_POLL_SECONDS, since=marker)
        while True:
            marker = signals.call_marker(call_id)  # before reading: a change meanwhile still wakes us
            with anyio.CancelScope(shield=True):  # never abandon a SQLite transaction half-way
                current = await calls.view_call(session=session, viewer=viewer, call_id=call_id)
            if settled(current.call.status, current.call.round):
                view = current
                break
            await signals.wait_for_call(call_id, DB_POLL_SECONDS, since=marker)
    if marker is not None:
        signals.drop_call_marker(call_id, marker)
    if view is not None:
        return view
    with anyio.CancelScope(shield=True):
        latest = await calls.view_call(session=session, viewer=viewer, call_id=call_id)
    return latest


def left_running(status: str, _round: int) -> bool:
    """Settled once the server has answered: the call finished or asks something."""
    return status not in ("running", "resuming")
