"""On PostgreSQL, wake-ups cross processes through LISTEN/NOTIFY: a dispatcher, a long-poll or a live inbox
elsewhere learns of a change at once, not at its next poll.

Every poll here is far longer than the bounded waits, so only a wake-up that crossed can end them in time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import anyio
import pytest

from console.dispatch.signals import Signals
from console.dispatch.wakeups import across_processes
from tests.backends import terminate, until_gone
from tests.harness import running_console, stdio_mrtr
from tests.processes import read_log, worker_process

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

NEVER = 600.0  # a poll that never comes within a test
BOUND = 20.0  # how long a wake-up may take on a loaded machine


@asynccontextmanager
async def listening(database_url: str, count: int) -> AsyncIterator[list[Signals]]:
    """`count` processes' signals, as if in separate processes, once each is listening."""
    every = [Signals() for _ in range(count)]
    async with AsyncExitStack() as stack:
        for signals in every:
            await _once_listening(stack, database_url, signals)
        yield every


async def _once_listening(stack: AsyncExitStack, database_url: str, signals: Signals) -> None:
    # Once its LISTEN holds, a process wakes its own waiters once (whatever it missed, it looks at again).
    listens = signals.work_marker()
    await stack.enter_async_context(across_processes(database_url, signals))
    with anyio.fail_after(BOUND):
        await signals.wait_for_work(NEVER, since=listens)


async def test_a_changed_call_wakes_its_waiter_in_another_process(postgres_url: str) -> None:
    async with listening(postgres_url, 2) as (here, there):
        waiting = there.call_marker("call-1")
        other = there.call_marker("call-2")
        here.call_changed("call-1")
        with anyio.fail_after(BOUND):
            await there.wait_for_call("call-1", NEVER, since=waiting)
        assert not other.is_set()  # only the call that changed


async def test_new_work_and_any_change_wake_the_other_processes(postgres_url: str) -> None:
    async with listening(postgres_url, 3) as (here, *others):
        works = [signals.work_marker() for signals in others]
        here.work_available()
        with anyio.fail_after(BOUND):
            for signals, marker in zip(others, works, strict=True):
                await signals.wait_for_work(NEVER, since=marker)
        here.something_changed()  # heard no sooner than this task waits: sending takes the event loop
        with anyio.fail_after(BOUND):
            await others[0].wait_for_change(NEVER)


async def test_wake_ups_cross_again_after_the_connections_were_cut(postgres_url: str) -> None:
    async with listening(postgres_url, 2) as (here, there):
        back = there.work_marker()
        await terminate(postgres_url, "LISTEN%", "%pg_notify%")
        with anyio.fail_after(BOUND):  # it listens again, and looks at everything once
            await there.wait_for_work(NEVER, since=back)
        waiting = there.call_marker("call-1")
        here.call_changed("call-1")
        with anyio.fail_after(BOUND):
            await there.wait_for_call("call-1", NEVER, since=waiting)


async def test_a_wake_up_sent_on_a_connection_that_died_goes_out_once_connected_again(
    postgres_url: str,
) -> None:
    async with listening(postgres_url, 2) as (here, there):
        crossed = there.call_marker("call-0")
        here.call_changed("call-0")  # now the sending connection's last statement names pg_notify
        with anyio.fail_after(BOUND):
            await there.wait_for_call("call-0", NEVER, since=crossed)
        senders = await terminate(postgres_url, "%pg_notify%")
        assert len(senders) == 1, senders  # here's; there has sent nothing, and both still listen
        await until_gone(postgres_url, senders, BOUND)
        waiting = there.call_marker("call-1")
        here.call_changed("call-1")  # tried first on the connection that is gone
        with anyio.fail_after(BOUND):
            await there.wait_for_call("call-1", NEVER, since=waiting)


async def test_a_worker_process_sends_and_resumes_a_call_made_in_another_process_at_once(
    postgres_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(postgres_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        worker = worker_process(
            postgres_url, tmp_path / "worker.txt", CONSOLE_DISPATCH_POLL_SECONDS=str(NEVER)
        )
        try:
            with anyio.fail_after(BOUND):  # each wait is woken from the other process, or times out
                asking = await console.call("mrtr", "signed", {"item": "crossed"}, wait=BOUND)
                assert asking["status"] == "awaiting_input", asking
                done = await console.answer_and_settle(asking, "accept", {"ok": True})
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "signed crossed ok=True"
    assert len([r for r in read_log(log) if r["arguments"] == {"item": "crossed"}]) == 2  # asked, resumed
