"""A new call, and the resume an answer completes, handed to this process's dispatcher are recorded as
being sent, so they are sent at once: never claimed from the queue, and never waiting for a sending slot,
whose wait could outlast the lease and leave the call interrupted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.calls.models import DispatchJob
from console.runtime import store
from tests.harness import WAIT, Console, memory_mrtr, result_text, running_console
from tests.processes import read_log, requests_with

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def without_sending_slots(console: Console) -> AsyncIterator[None]:
    """The console's dispatcher is one whose claimer never takes a job from the queue: only what is
    handed over to it is sent."""
    no_slots = console.new_dispatcher(concurrency=0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(no_slots.run)
        # Its claimer waits for a slot that never comes; what the test needs is that it takes hand-overs.
        # (Waiting for every task to block instead never ended on a busy machine: the console's own
        # loops kept running.)
        with anyio.fail_after(WAIT):
            while not no_slots.accepting:  # the dispatcher tells no one it started
                await anyio.lowlevel.checkpoint()  # no time passes: its run() enters its task group
        store(console.app, replace(console.runtime, dispatcher=no_slots))
        yield
        tasks.cancel_scope.cancel()


async def test_a_handed_over_call_is_sent_while_every_sending_slot_is_taken(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with (
        running_console(database_url, {"mrtr": memory_mrtr(log)}, dispatcher=False) as console,
        without_sending_slots(console),
    ):
        done = await console.call("mrtr", "complete_now", {"x": "now"}, wait=20)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "hello now"
    assert [r["name"] for r in read_log(log) if r.get("name") == "complete_now"] == ["complete_now"]


async def test_the_resume_an_answer_completes_is_sent_while_every_sending_slot_is_taken(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with (
        running_console(database_url, {"mrtr": memory_mrtr(log)}, dispatcher=False) as console,
        without_sending_slots(console),
    ):
        call = await console.call("mrtr", "two_rounds", {"topic": "handed"}, wait=20)
        assert call["status"] == "awaiting_input", call
        second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
        assert second["status"] == "awaiting_input", second
        done = await console.answer_and_settle(second, "accept", {"amount": 1.5, "count": 2})
        async with console.runtime.factory() as session:
            jobs = (await session.execute(select(DispatchJob.kind, DispatchJob.status))).all()
            sent = (
                await session.execute(select(AuditEvent.action).where(AuditEvent.action == "request_sent"))
            ).scalars()
            assert len(list(sent)) == 3
    assert result_text(done) == "Ada 1.5 2"
    assert sorted(jobs) == [("initial", "done"), ("resume", "done"), ("resume", "done")]
    sent_to_server = requests_with(log, "topic", "handed")
    assert [r["request_state"] for r in sent_to_server] == [None, "r1", "r2:Ada"]
