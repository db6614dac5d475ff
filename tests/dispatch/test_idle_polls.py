"""A dispatcher's polls for work and its housekeeping (overdue questions, agents' requests, sends whose
sender died) run every half second in every console process, and the notifier's at every change; they
mostly find nothing, and then read without a transaction, and on SQLite take no write lock: an idle
process neither waits for another process's write nor holds one up."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import anyio
import pytest

from console.calls.fanout import carriers_for
from console.calls.questions.decisions import expire_due
from console.db import utcnow
from console.notify.sender import deliver_due
from tests.harness import running_console

pytestmark = pytest.mark.anyio

BOUND = 10  # seconds: well below SQLite's lock wait (console/inline_sqlite.py), far above a read


async def test_polls_that_find_nothing_neither_wait_for_nor_hold_sqlites_write_lock(sqlite_url: str) -> None:
    async with running_console(sqlite_url, {}, dispatcher=False) as console:
        runtime = console.runtime
        dispatcher = console.new_dispatcher()
        # Never waits for a lock: locked, it fails at once.
        other = sqlite3.connect(
            sqlite_url.removeprefix("sqlite+aiosqlite:///"), timeout=0, isolation_level=None
        )
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's write transaction holds the lock
            with anyio.fail_after(BOUND):  # in a transaction: the lock wait (30 s), then "locked"
                await dispatcher.housekeep_once()
                assert await dispatcher._claim() is None  # the claimer's poll
                assert (
                    await deliver_due(
                        factory=runtime.factory, carriers=carriers_for(runtime.settings), now=utcnow()
                    )
                    == 0
                )
            other.execute("COMMIT")
            async with runtime.factory() as session:
                assert await expire_due(session=session, now=utcnow() + timedelta(days=1)) == []
                other.execute("BEGIN IMMEDIATE")  # the poll ended its read: the lock is free
                other.execute("COMMIT")
        finally:
            other.close()
