"""SQLite called on the event loop's own thread, through aiosqlite's interface.

aiosqlite runs each call of the sqlite3 module on a thread of its own and hands the result back to the
event loop: two thread switches per call, several per statement. On this project's machine that cost
more than SQLite's work itself (a ten-statement transaction: 6.8 ms through aiosqlite's thread, 1.0 ms
called directly). SQLite works on a local file in microseconds, so the console calls it directly, the
way aiosqlite's own thread would: what aiosqlite would queue for its thread is run at once.

The one wait that may be long is another process's write lock. SQLite is told never to wait for it (a
busy timeout of 0); a statement outside a transaction that finds the database locked (the `BEGIN
IMMEDIATE` every transaction starts with) is tried again after an asynchronous sleep, until the
connection's `timeout` passed, so the event loop serves others meanwhile.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import AsyncAdapt_aiosqlite_dbapi

DEFAULT_LOCK_WAIT = 30.0  # seconds a transaction waits for another process's write lock
FIRST_PAUSE, LONGEST_PAUSE = 0.001, 0.05  # between tries while the database is locked
DBAPI_NAMES = (
    "DatabaseError",
    "Error",
    "IntegrityError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "sqlite_version",
    "sqlite_version_info",
)


class _RunAtOnce:
    """Stands in for the queue to aiosqlite's thread: each function put in is run at once, and its
    future (when it has one) is done before `put_nowait` returns."""

    def put_nowait(self, item: tuple[asyncio.Future[Any] | None, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except BaseException as exc:  # handed to whoever awaits the future, as aiosqlite's thread does
            if future is None:
                raise
            future.set_exception(exc)
        else:
            if future is not None:
                future.set_result(result)


class InlineConnection(aiosqlite.Connection):
    def __init__(self, connector: Callable[[], sqlite3.Connection], lock_wait: float) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._tx = _RunAtOnce()  # type: ignore[assignment]  # the queue's one method that is used
        self._lock_wait = lock_wait

    def __await__(self) -> Any:
        return self._connect().__await__()  # no thread to start

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        deadline: float | None = None
        pause = FIRST_PAUSE
        while True:
            try:
                return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
            except sqlite3.OperationalError as exc:
                if not self._locked_out(exc):
                    raise
                deadline = deadline or time.monotonic() + self._lock_wait
                if time.monotonic() >= deadline:
                    raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_PAUSE)

    def _locked_out(self, exc: sqlite3.OperationalError) -> bool:
        """Locked by another connection before this one began a transaction: trying again is safe."""
        busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        return busy and self._connection is not None and not self._connection.in_transaction


def connect(database: str, *, timeout: float = DEFAULT_LOCK_WAIT, **kwargs: Any) -> InlineConnection:
    """Like `aiosqlite.connect`; `timeout` is how long to wait for another process's write lock."""
    kwargs.pop("isolation_level", None)

    def connector() -> sqlite3.Connection:
        # Autocommit at the driver: transactions are begun explicitly (BEGIN IMMEDIATE, console/db.py).
        connection: sqlite3.Connection = sqlite3.connect(database, timeout=0, isolation_level=None, **kwargs)
        return connection

    return InlineConnection(connector, timeout)


def inline_dbapi() -> AsyncAdapt_aiosqlite_dbapi:
    """The DBAPI module for `create_async_engine(..., module=...)` with a `sqlite+aiosqlite://` URL."""
    names = {name: getattr(aiosqlite, name) for name in DBAPI_NAMES}
    module = SimpleNamespace(connect=connect, Connection=InlineConnection, **names)
    return AsyncAdapt_aiosqlite_dbapi(module, sqlite3)  # type: ignore[arg-type]
