"""A call keeps the latest progress its (2026-07-28) server reported, for the API and the run page."""

from __future__ import annotations

import pytest

from tests.harness import Mrtr, ServerSpec, running_console

pytestmark = pytest.mark.anyio


async def test_a_call_keeps_the_last_progress_its_server_reported(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        call = await console.call("everything", "test_tool_with_progress", {})
        plain = await console.call("everything", "test_simple_text", {})
    assert call["status"] == "completed", call
    last = {key: call["progress"][key] for key in ("progress", "total", "message")}
    assert last == {"progress": 100, "total": 100, "message": "Completed step 100 of 100"}
    assert plain["progress"] is None  # a server that reports none shows none


async def test_a_resumed_requests_progress_replaces_the_first_requests(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "progress_rounds", {})
        asking = call["progress"]
        done = await console.answer_and_settle(call, "accept", {"ok": True})
    assert (asking["progress"], asking["message"]) == (1, "first request")
    assert done["status"] == "completed", done
    assert (done["progress"]["progress"], done["progress"]["message"]) == (2, "second request")
