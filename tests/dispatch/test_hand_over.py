"""A new call handed to this process's dispatcher is recorded as being sent, so it is sent at once: it
never waits for a sending slot, whose wait could outlast its lease and leave the call interrupted."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from console.dispatch.worker import Dispatcher
from tests.harness import WAIT, running_console, stdio_mrtr
from tests.processes import read_log

pytestmark = pytest.mark.anyio


async def test_a_handed_over_call_is_sent_while_every_sending_slot_is_taken(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        state = console.app.state
        no_slots = Dispatcher(
            factory=state.factory,
            pool=state.pool,
            settings=state.settings,
            signals=state.signals,
            attester=None,
            concurrency=0,  # the claimer never takes a job from the queue
        )
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(no_slots.run)
            with anyio.fail_after(WAIT):
                await wait_all_tasks_blocked()  # its claimer waits for a slot that never comes
            assert no_slots.accepting
            state.dispatcher = no_slots
            done = await console.call("mrtr", "complete_now", {"x": "now"}, wait=20)
            tasks.cancel_scope.cancel()
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "hello now"
    assert [r["name"] for r in read_log(log) if r.get("name") == "complete_now"] == ["complete_now"]
