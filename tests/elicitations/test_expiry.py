"""A question nobody answers in time is answered `cancel` (so the server learns) and is closed for good."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from console.calls.questions.decisions import expire_due
from console.db import create_engine, session_factory, utcnow
from console.transactions import transaction
from tests.harness import memory_mrtr, result_text, running_console
from tests.processes import read_log

pytestmark = pytest.mark.anyio


async def test_expired_question_is_answered_cancel_and_the_call_resumes(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(
        database_url, {"mrtr": memory_mrtr(log)}, elicitation_ttl_seconds=3600
    ) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "late"})
        question = call["pending"][0]["id"]
        engine = create_engine(database_url)
        try:
            async with transaction(session_factory(engine)) as session:
                expired = await expire_due(session=session, now=utcnow() + timedelta(hours=2))
        finally:
            await engine.dispose()
        assert expired == [call["id"]]
        console.runtime.signals.work_available()
        done = await console.settle(call["id"])
        late = await console.answer(question, "accept", {"name": "Ada"})
    assert result_text(done) == "stopped at first: cancel"
    assert late.status_code == 410
    assert late.json()["error"]["code"] == "gone"
    resume = [r for r in read_log(log) if r["name"] == "two_rounds" and r["has_request_state"]]
    assert [r["input_responses"] for r in resume] == [{"first": {"action": "cancel"}}]
