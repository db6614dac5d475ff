"""The unit of work (console/transactions.py): an entry point's transaction commits at its end, its
effects run only after that, and nothing else in the console commits or rolls back."""

from __future__ import annotations

import ast
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.db import create_engine, session_factory
from console.errors import Forbidden
from console.transactions import after_commit, commit, commit_if_kept, keep_only, keep_writes, transaction

CONSOLE = Path(__file__).resolve().parent.parent / "console"
UNIT = CONSOLE / "transactions.py"

pytestmark = pytest.mark.anyio

# The DBAPI-level SQLite adapter ends the driver's transactions, below any session.
DRIVER = frozenset({"inline_sqlite.py"})


def _ends_a_transaction(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"commit", "rollback"}
    )


def _modules_that_end_transactions() -> set[str]:
    found = set()
    for path in CONSOLE.rglob("*.py"):
        if path != UNIT and any(_ends_a_transaction(node) for node in ast.walk(ast.parse(path.read_text()))):
            found.add(path.relative_to(CONSOLE).as_posix())
    return found


def test_only_the_unit_of_work_commits_or_rolls_back() -> None:
    ending = _modules_that_end_transactions() - DRIVER
    assert ending == set(), "commit at the entry point with console.transactions"


def test_the_check_finds_a_commit_and_a_rollback() -> None:
    for source in ("await session.commit()", "session.rollback()", "await self.s.commit()"):
        assert any(_ends_a_transaction(node) for node in ast.walk(ast.parse(source))), source
    assert not any(_ends_a_transaction(node) for node in ast.walk(ast.parse("await commit(session)")))


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(database_url)
    factory = session_factory(engine)
    async with transaction(factory) as session:
        await session.execute(text("CREATE TABLE kept (what varchar(40) PRIMARY KEY)"))
        await session.commit()
    yield factory
    await engine.dispose()


async def _kept(factory: async_sessionmaker[AsyncSession]) -> list[str]:
    async with transaction(factory) as session:
        return list((await session.execute(text("SELECT what FROM kept ORDER BY what"))).scalars())


async def _keep(session: AsyncSession, what: str) -> None:
    await session.execute(text("INSERT INTO kept (what) VALUES (:what)"), {"what": what})


async def test_a_transaction_commits_at_its_end_and_then_runs_its_effects_in_order(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    seen: list[tuple[str, list[str]]] = []

    async def async_effect() -> None:
        seen.append(("async", await _kept(sessions)))

    async with transaction(sessions) as session:
        await _keep(session, "written")
        after_commit(session, lambda: seen.append(("sync", [])))
        after_commit(session, async_effect)
        assert seen == []
    assert seen == [("sync", []), ("async", ["written"])]  # the second saw the commit


async def _refuse(
    sessions: async_sessionmaker[AsyncSession], what: str, ran: list[str], *, kept: bool
) -> None:
    async with transaction(sessions) as session:
        await _keep(session, what)
        after_commit(session, lambda: ran.append(what))
        error = Forbidden(f"refused: {what}")
        raise keep_writes(session, error) if kept else error


async def test_an_error_rolls_back_the_writes_and_forgets_the_effects(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ran: list[str] = []
    with pytest.raises(Forbidden, match="refused: undone"):
        await _refuse(sessions, "undone", ran, kept=False)
    assert await _kept(sessions) == []
    assert ran == []


async def test_an_error_raised_with_keep_writes_commits_the_record_then_reaches_the_caller(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ran: list[str] = []
    with pytest.raises(Forbidden, match="refused: recorded"):
        await _refuse(sessions, "recorded", ran, kept=True)
    assert await _kept(sessions) == ["recorded"]
    assert ran == ["recorded"]
    with pytest.raises(Forbidden):  # the mark is for that error only, not the next transaction's
        await _refuse(sessions, "not kept", ran, kept=False)
    assert await _kept(sessions) == ["recorded"]
    assert ran == ["recorded"]


async def test_a_session_the_entry_point_holds_commits_only_the_error_raised_with_keep_writes(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session:  # a route's: the request's session
        await _keep(session, "recorded")
        await commit_if_kept(session, keep_writes(session, Forbidden("refused")))
    async with sessions() as session:
        await _keep(session, "undone")
        keep_writes(session, Forbidden("refused"))
        await commit_if_kept(session, Forbidden("another error"))
    assert await _kept(sessions) == ["recorded"]


def _refusal_record(what: list[str]) -> Callable[[AsyncSession], None]:
    """A record as `keep_only` takes it: written in the session when the unit ends (here: noted)."""
    return lambda session: what.append("refusal")


async def _refuse_after_a_write(
    sessions: async_sessionmaker[AsyncSession], ran: list[str], recorded: list[str]
) -> None:
    async with transaction(sessions) as session:
        await _keep(session, "undone")
        after_commit(session, lambda: ran.append("woken"))
        raise keep_only(session, Forbidden("refused after a write"), _refusal_record(recorded))


async def test_an_error_raised_with_keep_only_commits_its_record_alone(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ran: list[str] = []
    recorded: list[str] = []
    with pytest.raises(Forbidden, match="refused after a write"):
        await _refuse_after_a_write(sessions, ran, recorded)
    assert await _kept(sessions) == []  # the write before the refusal rolled back
    assert recorded == ["refusal"]  # the record was written once, after the rollback
    assert ran == []


async def test_a_refusal_raised_with_keep_only_that_the_entry_point_handles_commits_with_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    recorded: list[str] = []
    async with sessions() as session:  # a route that answers the refusal itself, then commits
        await _keep(session, "kept for later")
        try:
            raise keep_only(session, Forbidden("sign in again"), _refusal_record(recorded))
        except Forbidden:
            await commit(session)
    assert await _kept(sessions) == ["kept for later"]
    assert recorded == ["refusal"]


async def test_a_savepoints_rollback_keeps_the_transactions_effects(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    ran: list[str] = []
    async with transaction(sessions) as session:
        after_commit(session, lambda: ran.append("woken"))
        await _keep(session, "outer")
        savepoint = await session.begin_nested()
        await _keep(session, "inner")
        await savepoint.rollback()
    assert await _kept(sessions) == ["outer"]
    assert ran == ["woken"]


async def test_an_effect_that_fails_is_logged_and_the_others_still_run(
    sessions: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("the waiter is gone")

    with caplog.at_level(logging.ERROR, logger="console.transactions"):
        async with transaction(sessions) as session:
            await _keep(session, "durable")
            after_commit(session, broken)
            after_commit(session, lambda: ran.append("next"))
    assert ran == ["next"]
    assert await _kept(sessions) == ["durable"]
    assert "an effect after a commit failed" in caplog.text
