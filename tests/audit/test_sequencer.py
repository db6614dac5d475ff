"""A writer that finds the chain's head held does not wait for it: its events wait to be chained, in order,
by the next transaction that takes the head or by a sequencer."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from sqlalchemy import text

from console.audit import Sequencer
from console.audit.chain import SIGNER, on_left_waiting
from console.audit.checking import verify_database
from console.audit.signing import Signer
from console.audit.verify import Report
from console.db import create_engine, session_factory
from tests.audit.chain_setup import new_signer, write_events
from tests.cli_runner import run_console

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]  # on SQLite no transaction holds the head alone


@asynccontextmanager
async def head_held(url: str) -> AsyncIterator[None]:
    """Another transaction holds the head row until the block ends."""
    engine = create_engine(url)
    try:
        async with engine.connect() as holder:
            await holder.execute(text("SELECT seq FROM audit_head WHERE id = 1 FOR UPDATE"))
            yield
            await holder.rollback()
    finally:
        await engine.dispose()


def cli_verify(url: str) -> subprocess.CompletedProcess[str]:
    return run_console(["audit", "verify"], env={"CONSOLE_DATABASE_URL": url, "PATH": "/usr/bin:/bin"})


async def chain_state(url: str, signer: Signer) -> tuple[Report, list[str]]:
    """The chain's report and the subjects of its events, in chain order."""
    engine = create_engine(url)
    try:
        async with session_factory(engine)() as session:
            report = await verify_database(session=session, public_key=signer.key.public_key())
            rows = await session.execute(text("SELECT subject_id FROM audit_event ORDER BY seq"))
            return report, list(rows.scalars())
    finally:
        await engine.dispose()


async def test_a_writer_finding_the_head_held_commits_at_once_and_the_next_writer_chains_it_first(
    postgres_url: str,
) -> None:
    signer = new_signer()
    await write_events(postgres_url, signer, 2, label="before")
    woken = anyio.Event()
    undo = on_left_waiting(woken.set)
    try:
        async with head_held(postgres_url):
            with anyio.fail_after(10):  # it would wait for the holder forever
                await write_events(postgres_url, signer, 2, label="left")
            assert woken.is_set()
            report, subjects = await chain_state(postgres_url, signer)
            assert report.ok, report.lines()
            assert (report.events, report.waiting) == (2, 2)
            assert subjects == ["before0", "before1"]
            verified = await anyio.to_thread.run_sync(cli_verify, postgres_url)
            assert verified.returncode == 0, verified.stdout + verified.stderr
            assert "events recorded but not chained yet: 2" in verified.stdout
    finally:
        undo()
    await write_events(postgres_url, signer, 1, label="after")
    report, subjects = await chain_state(postgres_url, signer)
    assert report.ok, report.lines()
    assert (report.events, report.waiting) == (5, 0)
    assert subjects == ["before0", "before1", "left0", "left1", "after0"]


async def test_the_sequencer_chains_what_was_left_waiting_once_the_head_is_free(postgres_url: str) -> None:
    signer = new_signer(every=2)
    engine = create_engine(postgres_url)
    try:
        sequencer = Sequencer(session_factory(engine, info={SIGNER: signer}), sweep_seconds=3600)
        async with anyio.create_task_group() as tg:
            await tg.start(sequencer.run)
            passed = sequencer.next_pass()
            async with head_held(postgres_url):
                await write_events(postgres_url, signer, 3, label="left")
            with anyio.fail_after(10):
                await passed.wait()  # woken by the writer's commit, it waited for the holder
            tg.cancel_scope.cancel()
    finally:
        await engine.dispose()
    report, subjects = await chain_state(postgres_url, signer)
    assert report.ok, report.lines()
    assert (report.events, report.waiting, report.checkpoints) == (3, 0, 1)
    assert subjects == ["left0", "left1", "left2"]
