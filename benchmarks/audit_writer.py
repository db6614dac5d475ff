"""B7's writer: one process committing audit events through the console's own write path, on command.

python -m benchmarks.audit_writer CALL_ID    (settings from CONSOLE_* as `console serve` reads them)

It prints `ready` once its connection is open, then reads one command a line from standard input, a
mode and for how many seconds: `audit` commits transactions of one event each (`record_event`, chained
at commit when the head row is free, else left waiting; checkpoints signed as configured); `wait` does
the same but waits for the head row at every commit, as every writer did before `audit_pending`; `plain`
commits one row of a table no other writer locks (`b7_plain`, made by the benchmark). Each command
answers with one JSON line:
`{"commits": N, "seconds": S, "held": H, "takes": T}`: the seconds this process held the head row (on
SQLite the database's write lock, taken at BEGIN, is held a little longer) and how often it took it. It
runs a `Sequencer`, as every console process does. End of input ends the process.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

import console.models  # noqa: F401  # registers how events about a call find their team, server and tool
from console.audit import Actor, Sequencer, record_event, session_info
from console.audit.chain import WAIT_FOR_HEAD
from console.config import get_settings
from console.db import create_engine, session_factory

ACTOR = Actor("user", "b7-writer")
PLAIN_INSERT = text("INSERT INTO b7_plain (body) VALUES (:body)")


async def _audit(session: AsyncSession, call_id: str, n: int) -> None:
    record_event(
        session=session,
        actor=ACTOR,
        action="server_tested",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"n": n},
    )
    await session.commit()


async def _plain(session: AsyncSession, _call_id: str, n: int) -> None:
    await session.execute(PLAIN_INSERT, {"body": json.dumps({"n": n})})
    await session.commit()


STEPS = {"audit": _audit, "wait": _audit, "plain": _plain}


class HeadClock:
    """Adds up how long this process holds the head row: from a statement that locked it returning to its
    connection going back to the pool, after the commit (a process's writers and its sequencer each hold
    a connection of their own)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.held = 0.0
        self.takes = 0
        self._since: dict[int, float] = {}
        event.listen(engine.sync_engine, "after_cursor_execute", self._executed)
        event.listen(engine.sync_engine.pool, "checkin", self._returned)

    def _executed(self, conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        # A head skipped as locked returns no row; SQLite reports -1 for a read, and its write lock is
        # always held. On SQLite a writer may take the head by its UPDATE alone (the head it left last).
        taken = "FROM audit_head" in statement or statement.startswith("UPDATE audit_head")
        key = id(conn.connection.dbapi_connection)
        if taken and cursor.rowcount != 0 and key not in self._since:
            self.takes += 1
            self._since[key] = time.perf_counter()

    def _returned(self, dbapi_connection: Any, _record: Any) -> None:
        since = self._since.pop(id(dbapi_connection), None)
        if since is not None:
            self.held += time.perf_counter() - since


async def _measure(
    factories: dict[str, async_sessionmaker[AsyncSession]],
    clock: HeadClock,
    call_id: str,
    mode: str,
    seconds: float,
) -> str:
    step, factory = STEPS[mode], factories.get(mode, factories["audit"])
    commits = 0
    clock.held, clock.takes = 0.0, 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        async with factory() as session:
            await step(session, call_id, commits)
        commits += 1
    elapsed = time.perf_counter() - start
    return json.dumps({"commits": commits, "seconds": elapsed, "held": clock.held, "takes": clock.takes})


async def main(call_id: str) -> None:
    settings = get_settings()
    engine = create_engine(settings.database_url)
    factory = session_factory(engine, info=session_info(settings))
    factories = {
        "audit": factory,
        "wait": session_factory(engine, info={**session_info(settings), WAIT_FOR_HEAD: True}),
    }
    clock = HeadClock(engine)
    try:
        async with factory() as session:  # the connection is open before the first measurement
            await session.execute(text("SELECT 1"))
        async with anyio.create_task_group() as tg:
            tg.start_soon(Sequencer(factory).run)  # as in every console process
            print("ready", flush=True)  # noqa: T201  # the protocol with the benchmark
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                mode, seconds = line.split()
                print(await _measure(factories, clock, call_id, mode, float(seconds)), flush=True)  # noqa: T201  # protocol
            tg.cancel_scope.cancel()
    finally:
        await engine.dispose()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
