"""Wake-ups across the console's processes on PostgreSQL, through LISTEN/NOTIFY.

Every wake-up a process gives its `Signals` (new work, a changed call, any change) is sent on one channel
after the change it announces has committed; every other process on the same database hears it within
milliseconds and wakes its own waiters: a dispatcher, a long-poll, a live inbox or the notifier elsewhere
learns of a change as if it had happened in its own process. Polling stays as the safety net: a message
lost while a connection is down costs at most one poll, and after reconnecting everyone here looks again.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from console.db import is_sqlite, postgres_conninfo
from console.dispatch.signals import ANY, WORK, Signals

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    Connection = AsyncConnection[Any]

log = logging.getLogger(__name__)

CHANNEL = "console_wakeups"
RETRY_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0)  # before connecting again after 0, 1, 2… failures; then the last
MAX_QUEUED = 1000
WAKEUP_CONNECTIONS = 2  # each process holds one to listen and one to send (Wakeups.run)


@asynccontextmanager
async def across_processes(database_url: str, signals: Signals) -> AsyncIterator[None]:
    """While the block runs, `signals` reaches the other processes on this database (PostgreSQL only;
    SQLite has no such channel, and its processes keep polling)."""
    if is_sqlite(database_url):
        yield
        return
    wakeups = Wakeups(postgres_conninfo(database_url), signals)
    async with anyio.create_task_group() as tg:
        tg.start_soon(wakeups.run)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


class Wakeups:
    def __init__(self, conninfo: str, signals: Signals) -> None:
        self._conninfo = conninfo
        self._signals = signals
        self._outgoing: dict[str, None] = {}  # ordered and without repeats
        self._queued = anyio.Event()
        self._own_pid: int | None = None  # the sending connection's backend: our own messages come back

    async def run(self) -> None:
        self._signals.relay = self._queue
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._keep_up, self._listen, "listening")
                tg.start_soon(self._keep_up, self._send, "sending")
        finally:
            self._signals.relay = None

    def _queue(self, message: str) -> None:
        if len(self._outgoing) >= MAX_QUEUED:  # nobody has heard for a while: wake everything instead
            self._outgoing = dict.fromkeys((WORK, ANY))
        self._outgoing[message] = None
        self._queued.set()

    async def _keep_up(self, work: Callable[[Connection], Awaitable[None]], doing: str) -> None:
        import psycopg  # here, not above: a console on SQLite never loads it (9 MiB)

        failures = 0
        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
            except psycopg.OperationalError as error:
                failures += 1
                if failures == 1:
                    log.warning("cross-process wake-ups: cannot connect for %s (%s)", doing, error)
            else:
                failures = 0
                try:
                    await work(conn)
                except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                    log.warning("cross-process wake-ups: %s stopped (%s)", doing, error)
                finally:
                    with anyio.CancelScope(shield=True):  # closing awaits; a cancelled stop must not skip it
                        await conn.close()
            await anyio.sleep(RETRY_SECONDS[min(failures, len(RETRY_SECONDS) - 1)])

    async def _listen(self, conn: Connection) -> None:
        await conn.execute(f"LISTEN {CHANNEL}")
        # Whatever was said while this connection was down is lost: everyone here looks again.
        self._signals.heard(WORK)
        self._signals.heard(ANY)
        async for notify in conn.notifies():
            if notify.pid != self._own_pid:
                self._signals.heard(notify.payload)

    async def _send(self, conn: Connection) -> None:
        self._own_pid = conn.info.backend_pid
        while True:
            await self._queued.wait()
            self._queued = anyio.Event()
            messages, self._outgoing = list(self._outgoing), {}
            try:
                # One statement for the burst; messages in one transaction arrive in order, repeats once.
                await conn.execute(
                    "SELECT pg_notify(%s, message) FROM unnest(%s::text[]) AS message", (CHANNEL, messages)
                )
            except BaseException:
                # Perhaps not sent (the connection dropped): first out once connected again. Heard twice,
                # a wake-up only makes a waiter look once more.
                self._outgoing = {**dict.fromkeys(messages), **self._outgoing}
                self._queued.set()
                raise
