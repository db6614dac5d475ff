"""A console process that dies while its PostgreSQL transaction waits for a lock lets go of what it locked
(its dispatch jobs, say) at once, not once that wait ends: the server checks that its client is still
there (console/db.py)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from console.db import create_engine

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

# Locks one thing (advisory lock 1), says so, then waits for another (lock 2) until it is killed.
WAITER = """
import sys, anyio
from sqlalchemy import text
from console.db import create_engine

async def main(url):
    async with create_engine(url).connect() as connection:
        await connection.execute(text("SELECT pg_advisory_xact_lock(1)"))
        await connection.execute(text("SELECT pg_advisory_xact_lock(2)"))

anyio.run(main, sys.argv[1])
"""
BOUND = 30  # seconds; the check runs every second


def _start_waiter(database_url: str, name: str) -> subprocess.Popen[bytes]:
    """WAITER on `database_url`, its connection named `name` in pg_stat_activity."""
    return subprocess.Popen(
        [sys.executable, "-c", WAITER, database_url], env={**os.environ, "PGAPPNAME": name}
    )


async def _waits_for_a_lock(engine: AsyncEngine, name: str) -> bool:
    async with engine.connect() as connection:
        found = await connection.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = :name AND wait_event_type = 'Lock'"
            ),
            {"name": name},
        )
        return bool(found.scalar_one())


async def test_a_process_killed_while_it_waits_for_a_lock_lets_go_of_what_it_locked(
    postgres_url: str,
) -> None:
    engine = create_engine(postgres_url)
    name = f"waiter-{secrets.token_hex(4)}"
    try:
        async with engine.connect() as holder:
            await holder.execute(text("SELECT pg_advisory_xact_lock(2)"))  # what the waiter will wait for
            waiter = _start_waiter(postgres_url, name)
            try:
                with anyio.fail_after(BOUND):
                    while not await _waits_for_a_lock(engine, name):  # noqa: ASYNC110  # no event for it
                        await anyio.sleep(0.05)
            finally:
                waiter.kill()
                waiter.wait(timeout=BOUND)
            async with engine.connect() as other:
                with anyio.fail_after(BOUND):  # without the check: until `holder` lets go of lock 2
                    await other.execute(text("SELECT pg_advisory_xact_lock(1)"))
    finally:
        await engine.dispose()
