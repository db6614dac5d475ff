"""An error on a resume that may have performed the approved action is never followed by a second send:
the call fails with the server's error, shown to the agent and on the call's page. Only a refusal of the
request state itself starts the call again from round 1."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from console.calls.models import CallRound
from tests.harness import (
    MRTR_SERVER,
    Console,
    ServerSpec,
    html,
    memory_mrtr,
    result_text,
    running_console,
    signed_in,
    text,
)
from tests.processes import read_log, start_http_server

pytestmark = pytest.mark.anyio

INVALID_PARAMS = -32602


async def _approve_acts(console: Console, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call `acts`, have lead confirm it, and return the call once it settled."""
    call = await console.call("mrtr", "acts", arguments)
    assert call["status"] == "awaiting_input", call
    return await console.answer_and_settle(call, "accept", {"ok": True})


def _resumes(log: Path, item: str) -> list[dict[str, Any]]:
    """The retries of `acts` on `item` the server got: each one performed the action."""
    return [
        r
        for r in read_log(log)
        if r["name"] == "acts" and r["arguments"]["item"] == item and r["has_request_state"]
    ]


async def _call_page(console: Console, run_id: str) -> str:
    async with signed_in(console, "dev") as dev:
        page = await dev.client.get(f"/runs/{run_id}")
    assert page.status_code == 200, page.text
    return text(html(page))


@pytest.mark.parametrize("code", [-32603, INVALID_PARAMS])
async def test_a_server_that_acts_and_then_errs_on_the_resume_runs_the_action_once(
    database_url: str, tmp_path: Path, code: int
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        done = await _approve_acts(console, {"item": "invoice-7", "code": code})
        page = await _call_page(console, done["run_id"])
        restarts = await console.audit_payloads("state_rejected_restart")
        [failed] = await console.audit_payloads("call_failed")
    assert len(_resumes(log, "invoice-7")) == 1  # the action ran once
    assert done["status"] == "failed"
    assert done["round"] == 1  # no restart, no second question
    assert done["error"] == {
        "code": code,
        "message": "acted on invoice-7, then failed",
        "data": {"acted": "invoice-7"},
    }
    assert failed["error"] == done["error"]
    assert restarts == []
    assert "Error: acted on invoice-7, then failed" in page


async def test_an_http_500_on_the_resume_sends_nothing_again(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    env = {"MRTR_LOG": str(log), "MRTR_ACTS_HTTP_STATUS": "500"}
    with start_http_server([sys.executable, MRTR_SERVER], env, tmp_path / "server.txt") as server:
        async with running_console(database_url, {"mrtr": ServerSpec(url=server.url)}) as console:
            done = await _approve_acts(console, {"item": "invoice-8"})
            page = await _call_page(console, done["run_id"])
    calls = [r for r in read_log(log) if r["name"] == "acts"]
    assert [r["has_request_state"] for r in calls] == [False, True]  # the first request and one resume
    assert done["status"] == "failed"
    assert done["error"]["message"] == "the server answered tools/call with HTTP 500"
    assert "Error: the server answered tools/call with HTTP 500" in page


async def test_a_refused_request_state_still_restarts_from_round_one(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        call = await console.call("mrtr", "signed", {"item": "doc"})
        async with console.runtime.factory() as session:  # a state the server will not recognise
            await session.execute(
                update(CallRound).where(CallRound.call_id == call["id"]).values(request_state_json='"forged"')
            )
            await session.commit()
        done = await console.answer_and_settle(call, "accept", {"ok": True})
        [restart] = await console.audit_payloads("state_rejected_restart")
    assert result_text(done) == "signed doc ok=True"  # the identical question, answered as before
    assert done["round"] == 2
    assert restart["error"]["data"] == {"reason": "invalid_request_state"}
    signed = [r["has_request_state"] for r in read_log(log) if r["name"] == "signed"]
    assert signed == [False, True, False, True]  # the refused resume, then round 1 again and its resume
