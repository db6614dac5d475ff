"""On SQLite a process chains after the head its own last commit left, without reading it first, and
reads it only when someone else moved it (another process, another engine on the file) or a checkpoint is
due; the chain stays whole either way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from console.audit.checking import verify_database
from console.audit.signing import Signer
from tests.audit.chain_setup import event_writer, new_signer, write_event

pytestmark = pytest.mark.anyio


@contextmanager
def statements_of(factory: async_sessionmaker[AsyncSession]) -> Iterator[list[str]]:
    engine: AsyncEngine = factory.kw["bind"]
    seen: list[str] = []

    def executed(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(" ".join(statement.split()))

    event.listen(engine.sync_engine, "before_cursor_execute", executed)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", executed)


def touching_the_head(statements: list[str]) -> list[str]:
    return [s.split(" WHERE")[0] for s in statements if "audit_head" in s]


async def chain_of(url: str, signer: Signer | None = None) -> tuple[bool, list[tuple[int, str]]]:
    """Whether the chain verifies, and its events' (seq, subject) in chain order."""
    async with event_writer(url) as factory, factory() as session:
        report = await verify_database(
            session=session, public_key=signer.key.public_key() if signer else None
        )
        rows = await session.execute(text("SELECT seq, subject_id FROM audit_event ORDER BY seq"))
        return report.ok, [(seq, subject) for seq, subject in rows.all()]


async def test_a_process_chains_after_its_own_last_head_without_reading_it(sqlite_url: str) -> None:
    async with event_writer(sqlite_url) as factory:
        with statements_of(factory) as first:
            await write_event(factory, "a")
        with statements_of(factory) as then:
            await write_event(factory, "b")
            await write_event(factory, "c")
    assert touching_the_head(first)[0].startswith("SELECT audit_head.seq")  # nothing known yet: read
    assert touching_the_head(then) == ["UPDATE audit_head SET seq=?, hash=?"] * 2  # no read
    verified, events = await chain_of(sqlite_url)
    assert verified
    assert [subject for _seq, subject in events] == ["a", "b", "c"]


async def test_a_head_another_writer_moved_is_read_again_and_the_chain_stays_whole(sqlite_url: str) -> None:
    async with event_writer(sqlite_url) as one, event_writer(sqlite_url) as other:
        await write_event(one, "one-1")
        await write_event(other, "other-1")  # moves the head one knows
        with statements_of(one) as after_other:
            await write_event(one, "one-2")
        with statements_of(one) as after_own:
            await write_event(one, "one-3")
        await write_event(other, "other-2")
    # Tried the head it knew, found it moved, read it and chained after it; then knew it again.
    assert [s.split(" ")[0] for s in touching_the_head(after_other)] == ["UPDATE", "SELECT", "UPDATE"]
    assert touching_the_head(after_own) == ["UPDATE audit_head SET seq=?, hash=?"]
    verified, events = await chain_of(sqlite_url)
    assert verified
    assert events == [(1, "one-1"), (2, "other-1"), (3, "one-2"), (4, "one-3"), (5, "other-2")]


async def test_a_commit_that_fails_after_chaining_leaves_the_known_head_as_it_was(sqlite_url: str) -> None:
    async with event_writer(sqlite_url) as factory:
        await write_event(factory, "kept-1")

        def refuse(_session: Session) -> None:  # runs after the chain's own before_commit hook
            raise RuntimeError("the commit failed")

        event.listen(Session, "before_commit", refuse)
        try:
            with pytest.raises(RuntimeError, match="the commit failed"):
                await write_event(factory, "lost")
        finally:
            event.remove(Session, "before_commit", refuse)
        with statements_of(factory) as after_failure:
            await write_event(factory, "kept-2")
    # The head it knew is still the one kept-1 left: the failed commit's head was never taken as known.
    assert touching_the_head(after_failure) == ["UPDATE audit_head SET seq=?, hash=?"]
    verified, events = await chain_of(sqlite_url)
    assert verified
    assert events == [(1, "kept-1"), (2, "kept-2")]


async def test_checkpoints_are_signed_on_time_after_a_known_head(sqlite_url: str) -> None:
    signer = new_signer(every=5)
    async with event_writer(sqlite_url, signer) as factory:
        for index in range(12):
            await write_event(factory, f"e{index}")
    verified, events = await chain_of(sqlite_url, signer)
    assert verified
    assert len(events) == 12
    async with event_writer(sqlite_url) as factory, factory() as session:
        signed = (await session.execute(text("SELECT seq FROM audit_checkpoint ORDER BY seq"))).scalars()
        assert list(signed) == [1, 6, 11]
