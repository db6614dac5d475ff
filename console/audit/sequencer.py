"""Chaining the events that wait in `audit_pending`, off the request path.

A transaction that finds the head row held leaves its events waiting (console/audit/chain.py); the next
one that takes the head chains them first. When none comes soon, each console process's `Sequencer`
does: woken by its own commits that left events waiting, and looking every `sweep_seconds` for events
other processes left (a command, or a process that stopped). It chains a batch per transaction. It does
not queue for the head row either: while another transaction holds it, it looks again shortly.
"""

from __future__ import annotations

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus
from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from console.audit.chain import BATCH, HEAD_IF_FREE, Head, append, on_left_waiting, take_waiting
from console.audit.models import AuditPending
from console.transactions import transaction


async def chain_waiting(*, session: AsyncSession) -> int | None:
    """Chain the oldest waiting events (up to a batch) unless another transaction holds the head row; how
    many, or None when one does."""
    if not (await session.execute(select(exists(select(AuditPending.id))))).scalar_one():
        return 0

    def chain(sync_session: Session) -> int | None:
        found = sync_session.execute(HEAD_IF_FREE).one_or_none()
        if found is None:
            return None
        earlier = take_waiting(sync_session, BATCH)
        if earlier:
            append(sync_session, Head(*found[:-1]), earlier)
        return len(earlier)

    chained = await session.run_sync(chain)
    return chained


SWEEP_SECONDS = 2.0
RETRY_SECONDS = 0.05  # the first wait while another transaction holds the head; doubled up to the sweep


class Sequencer:
    """Chains what this process's transactions left waiting, and what others left, until cancelled."""

    def __init__(
        self, factory: async_sessionmaker[AsyncSession], *, sweep_seconds: float = SWEEP_SECONDS
    ) -> None:
        self._factory = factory
        self._sweep = sweep_seconds
        self._woken = anyio.Event()
        self._passed = anyio.Event()

    def wake(self) -> None:
        self._woken.set()

    def next_pass(self) -> anyio.Event:
        """Set when the loop's next pass over the waiting events has ended."""
        return self._passed

    async def run(self, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        """Until cancelled; started (with `TaskGroup.start`) once it hears this process's commits."""
        async with self._factory() as session:
            if session.get_bind().dialect.name == "sqlite":
                task_status.started()
                return  # every SQLite writer holds the whole database, so none ever leaves events waiting
        undo = on_left_waiting(self.wake)
        task_status.started()
        try:
            while True:
                with anyio.move_on_after(self._sweep):
                    await self._woken.wait()
                self._woken = anyio.Event()  # before draining: a wake-up during it is not lost
                await self.drain()
                self._passed.set()
                self._passed = anyio.Event()
        finally:
            undo()

    async def drain(self) -> int:
        """Chain everything waiting now, a batch per transaction; how many."""
        total, pause = 0, RETRY_SECONDS
        while True:
            async with transaction(self._factory) as session:
                chained = await chain_waiting(session=session)
            if chained is None:
                # The head's holder is another transaction, of any process: nothing announces its end,
                # and queueing for it would only make the writers that find it held leave more waiting.
                # While writers keep taking it, they chain what waits; so look less and less often.
                await anyio.sleep(pause)
                pause = min(2 * pause, self._sweep)
                continue
            total += chained
            if chained < BATCH:
                return total
