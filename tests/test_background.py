"""A background loop waits out a database error and goes on, telling `Health` (and so `/readyz`) while it
waits; any other error ends it, and `console serve` with it (exit code 1), so that a supervisor starts
another process."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest
from sqlalchemy import text

from console.background import Health, keep_going
from console.db import create_engine, session_factory
from tests.harness import SECRET_KEY, Console, running_console

pytestmark = pytest.mark.anyio

WAIT = 20.0


async def test_a_loop_waits_out_a_database_error_and_goes_on_once_the_database_answers(
    sqlite_url: str,
) -> None:
    engine = create_engine(sqlite_url)
    factory = session_factory(engine)
    health = Health()
    tried, went_on = anyio.Event(), anyio.Event()

    async def reads_a_table_made_later() -> None:
        tried.set()
        async with factory() as session:
            await session.execute(text("SELECT count(*) FROM made_later"))  # no such table, at first
        went_on.set()
        await anyio.sleep_forever()

    try:
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    partial(keep_going, "reader", reads_a_table_made_later, health=health, factory=factory)
                )
                await tried.wait()
                while "reader" not in health.troubles():  # noqa: ASYNC110  # Health offers no event
                    await anyio.sleep(0.01)
                assert health.troubles()["reader"].startswith("database error; trying again in")
                async with factory() as session:
                    await session.execute(text("CREATE TABLE made_later (id INTEGER)"))
                    await session.commit()
                await went_on.wait()
                assert health.troubles() == {}
                assert not health.ended.is_set()
                tg.cancel_scope.cancel()
    finally:
        await engine.dispose()


async def test_a_loop_that_fails_otherwise_ends_and_says_why(sqlite_url: str) -> None:
    engine = create_engine(sqlite_url)
    health = Health()

    async def broken() -> None:
        raise ValueError("not a database error")

    try:
        with pytest.raises(ValueError, match="not a database error"):
            await keep_going("broken", broken, health=health, factory=session_factory(engine))
    finally:
        await engine.dispose()
    assert health.ended.is_set()
    assert health.ended_because == "broken: ValueError: not a database error"
    assert health.troubles() == {"broken": "stopped: ValueError: not a database error"}


async def test_readyz_names_the_loop_kept_from_its_work_and_is_ready_once_it_works_again(
    postgres_url: str,
) -> None:
    async with running_console(postgres_url, {}) as console:
        await _execute(console, "ALTER TABLE dispatch_job RENAME TO dispatch_job_away")  # the claimer's table
        # The housekeeping reads the table too, and may be the first loop /readyz names.
        stalled = await _until_readyz(console, 503, naming="dispatcher's claimer")
        assert stalled.json()["status"] == "background work stalled"
        assert stalled.json()["loops"]["dispatcher's claimer"].startswith("database error; trying again in")
        await _execute(console, "ALTER TABLE dispatch_job_away RENAME TO dispatch_job")
        ready = await _until_readyz(console, 200)
        assert ready.json() == {"status": "ready"}


async def _execute(console: Console, statement: str) -> None:
    async with console.runtime.factory() as session:
        await session.execute(text(statement))
        await session.commit()


async def _until_readyz(console: Console, status: int, naming: str | None = None) -> httpx.Response:
    """The first /readyz answer with `status` (and, given `naming`, that names that loop)."""
    with anyio.fail_after(WAIT):
        while True:
            answer = await console.client.get("/readyz")
            if answer.status_code == status and (naming is None or naming in answer.json().get("loops", {})):
                return answer
            await anyio.sleep(0.05)  # polling: nothing announces a change of readiness


@pytest.mark.slow
def test_console_serve_exits_with_1_when_a_background_loop_cannot_go_on(
    sqlite_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "CONSOLE_DATABASE_URL": sqlite_url,
        "CONSOLE_SECRET_KEY": SECRET_KEY,
        "CONSOLE_ENV": "test",
        "CONSOLE_TEST_FAULT": "housekeeping_fails",
        "CONSOLE_DISPATCH_POLL_SECONDS": "0.1",
    }
    ended = subprocess.run(
        [sys.executable, "-m", "console.cli", "serve", "--port", "0", "--workers", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ended.returncode == 1, ended.stderr[-2000:]
    assert (
        ended.stdout.splitlines()[-1]
        == "stopped: dispatcher's housekeeping: RuntimeError: test fault housekeeping_fails"
    )
    assert "dispatcher's housekeeping stopped" in ended.stderr, ended.stderr[-2000:]
    assert "RuntimeError: test fault housekeeping_fails" in ended.stderr
