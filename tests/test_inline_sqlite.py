"""SQLite called on the event loop's thread (console/inline_sqlite.py): another process's write lock never
stops the loop; the transaction that waits for it goes ahead once it is free, or fails after its timeout."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from console.db import create_engine
from console.inline_sqlite import inline_dbapi
from tests.harness import WAIT

pytestmark = pytest.mark.anyio

LOOP_BOUND = 5  # seconds; a loop stopped by SQLite's own busy wait would be stopped for its 30 s


@contextmanager
def write_lock_elsewhere(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection (as another process would) holding the database's write lock until it commits."""
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("PRAGMA journal_mode=WAL")
        other.execute("CREATE TABLE IF NOT EXISTS note (text TEXT)")
        other.execute("BEGIN IMMEDIATE")
        yield other
    finally:
        other.close()


async def test_a_transaction_waits_for_a_lock_held_elsewhere_without_stopping_the_loop(
    tmp_path: Path,
) -> None:
    path = tmp_path / "console.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    written = anyio.Event()
    try:
        with write_lock_elsewhere(path) as other:

            async def write() -> None:
                async with engine.begin() as connection:
                    await connection.execute(text("INSERT INTO note VALUES ('from the console')"))
                written.set()

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(write)
                began = time.monotonic()
                await wait_all_tasks_blocked()
                # The loop ran on while the writer waited for the lock (it was not stopped in SQLite).
                assert time.monotonic() - began < LOOP_BOUND
                assert not written.is_set()
                other.execute("INSERT INTO note VALUES ('from elsewhere')")
                other.execute("COMMIT")
                with anyio.fail_after(WAIT):
                    await written.wait()
        async with engine.connect() as connection:
            notes = (await connection.execute(text("SELECT text FROM note"))).scalars().all()
        assert notes == ["from elsewhere", "from the console"]
    finally:
        await engine.dispose()


async def test_a_lock_held_past_the_timeout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "console.db"
    engine = create_async_engine(
        f"sqlite+aiosqlite:///{path}", module=inline_dbapi(), connect_args={"timeout": 0.2}
    )
    try:
        with write_lock_elsewhere(path):
            async with engine.connect() as connection:
                with pytest.raises(OperationalError, match="database is locked"):
                    await connection.exec_driver_sql("BEGIN IMMEDIATE")
    finally:
        await engine.dispose()
