"""The live inbox's fingerprint moves with every question that arrives or is decided, one whose decision
commits after a later-stamped one included, and stays put while nothing changes; on SQLite it and the
inbox's lists read without taking the write lock."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from sqlalchemy import func, select, update

from console.calls.models import Elicitation
from console.calls.questions.inbox import inbox_fingerprint, list_decided, list_questions
from console.db import create_engine, session_factory
from console.identity import Viewer
from console.identity.models import Team
from tests.harness import TEAM, Console, memory_mrtr, running_console, user_id

pytestmark = pytest.mark.anyio

READ_BOUND = 10  # seconds: well below SQLite's lock wait (console/inline_sqlite.py), far above a read


async def _fingerprint(console: Console, viewer: Viewer) -> tuple[object, ...]:
    async with console.runtime.factory() as session:
        return await inbox_fingerprint(session=session, viewer=viewer)


async def test_the_fingerprint_moves_with_arrivals_and_decisions_even_late_ones_and_only_then(
    database_url: str, tmp_path: Path
) -> None:
    async with running_console(database_url, {"mrtr": memory_mrtr(tmp_path / "requests.jsonl")}) as console:
        async with console.runtime.factory() as session:
            team_id = (await session.execute(select(Team.id).where(Team.name == TEAM))).scalar_one()
        viewer = Viewer(user_id=await user_id(console, "lead"), user_name="lead", roles={team_id: "approver"})
        empty = await _fingerprint(console, viewer)
        assert await _fingerprint(console, viewer) == empty

        first = await console.call("mrtr", "two_rounds", {"topic": "first"})
        second = await console.call("mrtr", "two_rounds", {"topic": "second"})
        asked = await _fingerprint(console, viewer)
        assert asked != empty

        await console.answer_and_settle(second, "accept", {"name": "Ada"})  # its next round asks again
        settled = await _fingerprint(console, viewer)
        assert settled != asked
        assert await _fingerprint(console, viewer) == settled

        # The first question decided with a stamp older than the newest decision, as when its
        # transaction commits after a later-stamped one: neither newest stamp moves.
        async with console.runtime.factory() as session:
            newest = (await session.execute(select(func.max(Elicitation.decided_at)))).scalar_one()
            assert newest is not None
            await session.execute(
                update(Elicitation)
                .where(Elicitation.id == first["pending"][0]["id"])
                .values(status="declined", decided_at=newest - timedelta(seconds=1))
            )
            await session.commit()
        assert await _fingerprint(console, viewer) != settled


async def test_on_sqlite_the_inbox_reads_wait_for_no_write_lock(sqlite_url: str, tmp_path: Path) -> None:
    async with running_console(sqlite_url, {"mrtr": memory_mrtr(tmp_path / "requests.jsonl")}) as console:
        asked = await console.call("mrtr", "two_rounds", {"topic": "locked"})
        async with console.runtime.factory() as session:
            team_id = (await session.execute(select(Team.id).where(Team.name == TEAM))).scalar_one()
        viewer = Viewer(user_id=await user_id(console, "lead"), user_name="lead", roles={team_id: "approver"})
    engine = create_engine(sqlite_url)  # as another process would read while a third one writes
    writer = sqlite3.connect(sqlite_url.removeprefix("sqlite+aiosqlite:///"), timeout=0, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        factory = session_factory(engine)
        with anyio.fail_after(READ_BOUND):  # taking the write lock, each would wait 30 s and fail
            async with factory() as session:
                assert await inbox_fingerprint(session=session, viewer=viewer) != ()
            async with factory() as session:
                waiting = await list_questions(session=session, viewer=viewer)
            async with factory() as session:
                decided = await list_decided(session=session, viewer=viewer)
        assert [view.elicitation.id for view in waiting] == [asked["pending"][0]["id"]]
        assert decided == []
    finally:
        writer.close()
        await engine.dispose()
