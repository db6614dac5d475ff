"""Restarts on either side between question and answer do not lose the call."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import httpx
import pytest
from sqlalchemy import select

from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound
from tests.harness import TEAM, WAIT, result_text, running_console, seed, stdio_deployer, stdio_mrtr
from tests.processes import console_process, read_log

pytestmark = pytest.mark.anyio

PRODUCTION = {"environment": "production", "confirm": True}


async def test_console_process_killed_between_question_and_answer_still_resumes(
    database_url: str, state_key: str, tmp_path: Path
) -> None:
    tokens = await seed(database_url, {"deployer": stdio_deployer(state_key)})
    headers = {"Authorization": f"Bearer {tokens['dev']}"}
    with console_process(database_url, tmp_path / "console.txt") as base:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            run = (await client.post("/api/v1/runs", json={"team": TEAM, "title": "restart"})).json()
            body = {
                "server": "deployer",
                "method": "tools/call",
                "params": {"name": "deploy", "arguments": {"service": "auth-service"}},
            }
            call = (
                await client.post(f"/api/v1/runs/{run['id']}/calls", params={"wait": WAIT}, json=body)
            ).json()
    assert call["status"] == "awaiting_input"
    with console_process(database_url, tmp_path / "console.txt") as base:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            question = call["pending"][0]["id"]
            answered = await client.post(
                f"/api/v1/elicitations/{question}/answer", json={"action": "accept", "content": PRODUCTION}
            )
            assert answered.status_code == 200, answered.text
            with anyio.fail_after(WAIT + 5):
                done = (await client.get(f"/api/v1/calls/{call['id']}", params={"wait": WAIT})).json()
    assert result_text(done) == "auth-service 2.4.1 is being deployed to production."


async def test_mcp_server_killed_between_rounds_is_restarted_and_completes(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    spec = stdio_mrtr(log)
    async with running_console(database_url, {"mrtr": spec}) as console:
        first_pid = int(result_text(await console.call("mrtr", "pid", {})))
        call = await console.call("mrtr", "signed", {"item": "doc"})
        assert call["status"] == "awaiting_input"
        async with console.runtime.factory() as session:
            server = (await session.execute(select(McpServer).where(McpServer.name == "mrtr"))).scalar_one()
        ended = console.runtime.pool.ended(endpoint_for(server, Outbound.of(console.runtime.settings)))
        os.kill(first_pid, signal.SIGKILL)
        with anyio.fail_after(WAIT):
            await ended.wait()  # the console noticed its child is gone
        done = await console.answer_and_settle(call, "accept", {"ok": True})
        second_pid = int(result_text(await console.call("mrtr", "pid", {})))
    assert result_text(done) == "signed doc ok=True"
    assert second_pid != first_pid
    resumed = [r for r in read_log(log) if r["name"] == "signed" and r["has_request_state"]]
    assert [r["pid"] for r in resumed] == [second_pid]


async def test_expired_deployer_state_restarts_and_reapplies_the_one_human_answer(
    database_url: str, state_key: str, tmp_path: Path
) -> None:
    clock = tmp_path / "clock"
    deployer = stdio_deployer(state_key, DEPLOY_TEST_CLOCK_FILE=str(clock))
    async with running_console(database_url, {"deployer": deployer}) as console:
        call = await console.call("deployer", "deploy", {"service": "auth-service"})
        clock.write_text("700")  # ten minutes and more pass before the lead answers
        done = await console.answer_and_settle(call, "accept", PRODUCTION)
        events = await console.client.get(f"/api/v1/calls/{call['id']}", headers=console.auth("dev"))
    assert result_text(done) == "auth-service 2.4.1 is being deployed to production."
    assert done["round"] == 2  # round 1 was refused as expired, round 2 is the identical question
    assert events.json()["pending"] == []
