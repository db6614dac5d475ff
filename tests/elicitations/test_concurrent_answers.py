"""Twenty people clicking at once: one decision, nineteen conflicts naming the winner, one resume."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest

from tests.harness import memory_mrtr, result_text, running_console
from tests.processes import read_log

pytestmark = pytest.mark.anyio

CLICKS = 20


async def test_twenty_concurrent_answers_give_one_decision_and_one_resume(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        call = await console.call("mrtr", "signed", {"item": "race"})
        question = call["pending"][0]["id"]
        responses: list[httpx.Response] = []

        async def click(i: int) -> None:
            who = ("lead", "lead2", "dev")[i % 3]
            responses.append(await console.answer(question, "accept", {"ok": i % 2 == 0}, who=who))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for i in range(CLICKS):
                    tg.start_soon(click, i)
        done = await console.settle(call["id"])
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * (CLICKS - 1)
    [winner] = [r.json() for r in responses if r.status_code == 200]
    conflicts = [r.json()["error"]["message"] for r in responses if r.status_code == 409]
    assert all(message == f"already answered: accepted by {winner['decided_by']}" for message in conflicts)
    assert result_text(done) == f"signed race ok={winner['content']['ok']}"
    resumes = [r for r in read_log(log) if r["name"] == "signed" and r["has_request_state"]]
    assert len(resumes) == 1
