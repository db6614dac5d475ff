"""SQLite called directly on the event loop's thread, as the DBAPI of SQLAlchemy's async SQLite dialect.

SQLAlchemy's asyncio layer expects a driver whose every call is a coroutine: with aiosqlite each call of
the sqlite3 module is queued to a thread of aiosqlite's own and its result handed back to the event loop,
and SQLAlchemy switches greenlets around every one of them. On this project's machine that cost more than
SQLite's own work (a ten-statement transaction: 6.8 ms through aiosqlite's thread, 1.0 ms with its calls
run at once, 0.4 ms for sqlite3 itself). SQLite works on a local file in microseconds, so this adapter
hands SQLAlchemy plain sqlite3 connections and cursors, with nothing awaited.

The one wait that may be long is another process's write lock. SQLite is told never to wait for it (a
busy timeout of 0); a statement outside a transaction that finds the database locked (the `BEGIN
IMMEDIATE` every transaction starts with) is tried again after an asynchronous sleep, until the
connection's `timeout` passed, so the event loop serves others meanwhile.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

from sqlalchemy.dialects.sqlite.aiosqlite import AsyncAdapt_aiosqlite_dbapi
from sqlalchemy.engine import AdaptedConnection
from sqlalchemy.util.concurrency import await_

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


class DirectCursor:
    """A sqlite3 cursor for SQLAlchemy's async dialect: it runs each statement at once."""

    server_side = False

    def __init__(self, connection: DirectConnection) -> None:
        self._owner = connection
        self._cursor: sqlite3.Cursor = connection.sqlite.cursor()

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        args = (operation,) if parameters is None else (operation, parameters)
        return self._owner.retrying(lambda: self._cursor.execute(*args))

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        return self._owner.retrying(lambda: self._cursor.executemany(operation, seq_of_parameters))

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    def fetchone(self) -> Any:
        return self._cursor.fetchone()

    def fetchmany(self, size: int | None = None) -> Sequence[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    def fetchall(self) -> Sequence[Any]:
        return self._cursor.fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._cursor)

    def setinputsizes(self, *_sizes: Any) -> None:
        return None

    def close(self) -> None:
        self._cursor.close()

    async def _async_soft_close(self) -> None:
        """What SQLAlchemy's async results call before handing rows back: nothing to do, since the rows
        are read from this cursor synchronously."""


class DirectConnection(AdaptedConnection):
    """A sqlite3 connection for SQLAlchemy's async dialect (it is `driver_connection` itself)."""

    __slots__ = ("dbapi", "sqlite", "_lock_wait")

    def __init__(self, dbapi: Any, connection: sqlite3.Connection, lock_wait: float) -> None:
        self.dbapi = dbapi
        self.sqlite = connection
        self._connection = connection  # type: ignore[assignment]  # what `driver_connection` hands out
        self._lock_wait = lock_wait

    def retrying(self, statement: Callable[[], Any]) -> Any:
        """Run the statement; while another connection holds the write lock and this one has not begun a
        transaction, try again after asynchronous pauses (SQLAlchemy runs this inside its greenlet)."""
        # SQLAlchemy's AsyncConnection insists that a statement awaited something; this costs two greenlet
        # switches and never suspends.
        await_(_at_once())
        deadline: float | None = None
        pause = FIRST_PAUSE
        while True:
            try:
                return statement()
            except sqlite3.OperationalError as exc:
                if not self._locked_out(exc):
                    raise
                deadline = deadline or time.monotonic() + self._lock_wait
                if time.monotonic() >= deadline:
                    raise
            await_(asyncio.sleep(pause))
            pause = min(pause * 2, LONGEST_PAUSE)

    def _locked_out(self, exc: sqlite3.OperationalError) -> bool:
        """Locked by another connection before this one began a transaction: trying again is safe."""
        busy = exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        return busy and not self.sqlite.in_transaction

    def cursor(self, server_side: bool = False) -> DirectCursor:
        return DirectCursor(self)

    def execute(self, operation: Any, parameters: Any = None) -> DirectCursor:
        cursor = self.cursor()
        cursor.execute(operation, parameters)
        return cursor

    def commit(self) -> None:
        self.sqlite.commit()

    def rollback(self) -> None:
        self.sqlite.rollback()

    def close(self) -> None:
        self.sqlite.close()

    def terminate(self) -> None:
        self.sqlite.close()

    def create_function(self, *args: Any, **kwargs: Any) -> None:
        self.sqlite.create_function(*args, **kwargs)

    @property
    def isolation_level(self) -> str | None:
        return self.sqlite.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: Any) -> None:
        self.sqlite.isolation_level = value


async def _at_once() -> None:
    return None


def connect(database: str, *, timeout: float = DEFAULT_LOCK_WAIT, **kwargs: Any) -> sqlite3.Connection:
    """A sqlite3 connection in autocommit at the driver: transactions are begun explicitly (`BEGIN
    IMMEDIATE`, console/db.py), and SQLite itself never waits for a lock (`timeout` is the adapter's)."""
    kwargs.pop("isolation_level", None)
    kwargs.pop("check_same_thread", None)
    connection: sqlite3.Connection = sqlite3.connect(
        database, timeout=0, isolation_level=None, check_same_thread=False, **kwargs
    )
    return connection


class _DirectDbapi(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *args: Any, **kwargs: Any) -> DirectConnection:  # type: ignore[override]
        lock_wait = kwargs.pop("timeout", DEFAULT_LOCK_WAIT)
        return DirectConnection(self, connect(*args, timeout=lock_wait, **kwargs), lock_wait)


def inline_dbapi() -> AsyncAdapt_aiosqlite_dbapi:
    """The DBAPI module for `create_async_engine(..., module=...)` with a `sqlite+aiosqlite://` URL."""
    names = {name: getattr(sqlite3, name) for name in DBAPI_NAMES}
    driver = SimpleNamespace(Connection=sqlite3.Connection, __version__=sqlite3.sqlite_version, **names)
    return _DirectDbapi(driver, sqlite3)  # type: ignore[arg-type]
