"""Database connections: a console process that dies while its transaction waits for a PostgreSQL lock lets
go of what it locked (its dispatch jobs, say) at once, not once that wait ends, because the server checks
that its client is still there; a pooled connection that died while idle is replaced unnoticed; reads that
skip BEGIN leave the next transaction on their connection whole, and on SQLite neither wait for another
connection's write lock nor hold one; rows inserted with plain statements get what a flush would give them
(console/db.py)."""

from __future__ import annotations

import os
import secrets
import sqlite3
import subprocess
import sys

import anyio
import pytest
from sqlalchemy import Text, event, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from console import db
from console.db import create_engine, reads_without_begin
from tests.backends import until_gone

pytestmark = pytest.mark.anyio

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
READ_BOUND = 10  # seconds: well below SQLite's lock wait (console/inline_sqlite.py), far above a read


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


@pytest.mark.postgres
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


async def _kept(session: AsyncSession) -> list[str]:
    return list((await session.execute(text("SELECT what FROM kept ORDER BY what"))).scalars())


async def test_reads_without_begin_end_at_their_commit_and_the_connection_takes_transactions_again(
    database_url: str,
) -> None:
    engine = create_engine(database_url, pool_size=1)  # every session below gets the same connection
    try:
        async with AsyncSession(engine, expire_on_commit=False) as session:  # as the console's sessions
            await session.execute(text("CREATE TABLE kept (what text PRIMARY KEY, note text)"))
            await session.commit()
            await reads_without_begin(session)
            await session.execute(text("INSERT INTO kept (what) VALUES ('kept: no transaction')"))
            await session.rollback()
            assert await _kept(session) == ["kept: no transaction"]
            await session.commit()
            # The same connection, in a transaction again: a rollback undoes what it did.
            await session.execute(text("INSERT INTO kept (what) VALUES ('undone')"))
            await session.rollback()
            assert await _kept(session) == ["kept: no transaction"]
            # Inside a transaction it changes nothing: the rollback undoes this one too.
            await session.execute(text("INSERT INTO kept (what) VALUES ('undone too')"))
            await reads_without_begin(session)
            await session.rollback()
            assert await _kept(session) == ["kept: no transaction"]
            # Nor with a change not yet flushed (making it began a transaction): a rollback undoes it.
            kept = (await session.execute(select(Kept))).scalar_one()
            await session.commit()
            kept.note = "undone as well"
            await reads_without_begin(session)
            await session.flush()
            await session.rollback()
            notes = await session.execute(text("SELECT note FROM kept"))
            assert list(notes.scalars()) == [None]
    finally:
        await engine.dispose()


async def test_on_sqlite_reads_without_begin_neither_wait_for_nor_hold_up_another_connections_writes(
    sqlite_url: str,
) -> None:
    engine = create_engine(sqlite_url)
    # Never waits for a lock: locked, it fails at once.
    other = sqlite3.connect(sqlite_url.removeprefix("sqlite+aiosqlite:///"), timeout=0, isolation_level=None)
    try:
        async with AsyncSession(engine) as session:
            assert await _migrations(session) == 1  # the engine's own connection is open (WAL)
            await session.commit()
            other.execute("BEGIN IMMEDIATE")  # another process's write transaction holds the lock
            with anyio.fail_after(READ_BOUND):  # in a transaction: the lock wait (30 s), then "locked"
                await reads_without_begin(session)
                assert await _migrations(session) == 1
            other.execute("COMMIT")
            assert await _migrations(session) == 1  # the session has not committed yet
            other.execute("BEGIN IMMEDIATE")  # in a transaction, the session would hold the lock
            other.execute("COMMIT")
            await session.commit()
    finally:
        other.close()
        await engine.dispose()


async def _migrations(session: AsyncSession) -> int:
    return int((await session.execute(text("SELECT count(*) FROM alembic_version"))).scalar_one())


class _Scratch(DeclarativeBase):
    pass


class Kept(_Scratch):
    __tablename__ = "kept"
    what: Mapped[str] = mapped_column(Text, primary_key=True)
    note: Mapped[str | None] = mapped_column(Text)


class Stamped(_Scratch):
    __tablename__ = "stamped"
    id: Mapped[str] = mapped_column(Text, primary_key=True, default=db.new_id)
    kind: Mapped[str] = mapped_column(Text, default="plain")
    note: Mapped[str | None] = mapped_column(Text)
    set_by_database: Mapped[str] = mapped_column(Text, server_default="from the database")


async def test_rows_inserted_with_plain_statements_get_their_defaults_and_stay_out_of_the_session(
    database_url: str,
) -> None:
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.run_sync(Stamped.metadata.create_all)
        plain, named = Stamped(), Stamped(id="chosen", kind="special", note=None)
        statements: list[str] = []
        event.listen(engine.sync_engine, "before_cursor_execute", lambda *sent: statements.append(sent[2]))
        async with AsyncSession(engine, expire_on_commit=False) as session:
            await db.insert_rows(session, plain, named)
            inserts = [statement for statement in statements if "INSERT" in statement]
            assert len(inserts) == (1 if engine.dialect.name == "postgresql" else 2)  # one round trip there
            assert plain not in session
            assert (plain.kind, plain.note) == ("plain", None)
            assert len(plain.id) == len(db.new_id())
            await session.commit()
            rows = (await session.execute(select(Stamped).order_by(Stamped.kind))).scalars().all()
        kept = [(row.id, row.kind, row.note, row.set_by_database) for row in rows]
        assert kept == [
            (plain.id, "plain", None, "from the database"),
            ("chosen", "special", None, "from the database"),
        ]
    finally:
        await engine.dispose()


async def _backend(engine: AsyncEngine) -> int:
    async with engine.connect() as connection:
        return int((await connection.execute(text("SELECT pg_backend_pid()"))).scalar_one())


@pytest.mark.postgres
async def test_a_pooled_connection_that_died_while_idle_is_replaced_before_use(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = create_engine(postgres_url, pool_size=1)  # one connection, handed back each time
    admin = create_engine(postgres_url)
    try:
        first = await _backend(engine)
        assert await _backend(engine) == first  # the same connection while it lives
        async with admin.connect() as connection:
            await connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
        await until_gone(postgres_url, [first], BOUND)
        monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.0)  # it has now been idle long enough
        assert await _backend(engine) not in (first, None)
    finally:
        await engine.dispose()
        await admin.dispose()
