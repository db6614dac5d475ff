"""PostgreSQL backends in tests: ending those of a database, and waiting until they are gone."""

from __future__ import annotations

import anyio
import psycopg

from console.db import postgres_conninfo


async def terminate(database_url: str, *queries_like: str) -> list[int]:
    """Ends the backends of this database whose last statement is like one of `queries_like`; their pids."""
    async with await psycopg.AsyncConnection.connect(postgres_conninfo(database_url)) as admin:
        ended = await admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND query LIKE ANY(%s) AND pg_terminate_backend(pid)",
            (list(queries_like),),
        )
        return [pid for (pid,) in await ended.fetchall()]


async def until_gone(database_url: str, pids: list[int], bound: float) -> None:
    """Returns once none of `pids` is a backend any more; TimeoutError after `bound` seconds."""
    with anyio.fail_after(bound):
        while await _running(database_url, pids):  # noqa: ASYNC110  # no event for a backend's end
            await anyio.sleep(0.05)


async def _running(database_url: str, pids: list[int]) -> bool:
    # A new connection each time: a transaction sees pg_stat_activity as it was at its first read.
    async with await psycopg.AsyncConnection.connect(postgres_conninfo(database_url)) as connection:
        found = await connection.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,))
        row = await found.fetchone()
        return bool(row and row[0])
