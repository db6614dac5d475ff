"""A request whose outcome was lost (its stdio server died with it out) is sent again by the console when
the server is marked idempotent, at most CONSOLE_IDEMPOTENT_RESENDS times, and says so in the audit log;
any other server's call, or a send people approved, is interrupted for a person to decide. The same holds
for a send lost with the `console worker` process that made it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from console.mcp.models import McpServer
from tests.dispatch.test_crashes import (
    CRASH_EXIT_CODE,
    _healthy_worker,
    _worker,
)
from tests.harness import Console, result_text, running_console, stdio_mrtr
from tests.policies.setup import set_policy
from tests.processes import WORKER_WAIT, ended, read_log

pytestmark = pytest.mark.anyio


async def _mark_idempotent(console: Console) -> None:
    async with console.runtime.factory() as session:
        await session.execute(update(McpServer).where(McpServer.name == "mrtr").values(idempotent=True))
        await session.commit()


async def _call_dies(console: Console, marker: Path, times: int) -> dict[str, Any]:
    call = await console.call("mrtr", "dies", {"marker": str(marker), "times": times}, wait=0)
    return await console.settle(call["id"], wait=WORKER_WAIT)  # the server dies and starts again, maybe twice


def _sends(log: Path, marker: Path) -> list[dict[str, Any]]:
    return [r for r in read_log(log) if r["name"] == "dies" and r["arguments"]["marker"] == str(marker)]


async def test_a_lost_request_to_an_idempotent_server_is_sent_again_once_it_is_back(
    database_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "requests.jsonl", tmp_path / "marker"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}) as console:
        await _mark_idempotent(console)
        done = await _call_dies(console, marker, times=1)
        [resent] = await console.audit_payloads("call_resent")
        interrupted = await console.audit_payloads("call_interrupted")
    assert result_text(done) == f"survived {marker}"
    first, second = _sends(log, marker)
    assert first["pid"] != second["pid"]  # the server died with the first and was started again
    assert (resent["automatic"], resent["sent"], resent["resends"]) == (True, 1, 3)
    assert "the outcome is unknown" in resent["reason"]
    assert interrupted == []


async def test_resends_are_bounded_and_then_the_call_is_interrupted(
    database_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "requests.jsonl", tmp_path / "marker"
    servers = {"mrtr": stdio_mrtr(log)}
    async with running_console(database_url, servers, idempotent_resends=1) as console:
        await _mark_idempotent(console)
        done = await _call_dies(console, marker, times=5)
        resent = await console.audit_payloads("call_resent")
    assert done["status"] == "interrupted", done
    assert "the outcome is unknown" in done["error"]["message"]
    assert len(_sends(log, marker)) == 2  # the first send and one resend
    assert [r["sent"] for r in resent] == [1]


async def test_a_lost_request_to_a_server_not_marked_idempotent_waits_for_a_person(
    database_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "requests.jsonl", tmp_path / "marker"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}) as console:
        done = await _call_dies(console, marker, times=1)
        resent = await console.audit_payloads("call_resent")
    assert done["status"] == "interrupted", done
    assert len(_sends(log, marker)) == 1
    assert resent == []


async def test_an_approved_send_to_an_idempotent_server_is_never_sent_again_by_itself(
    database_url: str, tmp_path: Path
) -> None:
    log, marker = tmp_path / "requests.jsonl", tmp_path / "marker"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}) as console:
        await _mark_idempotent(console)
        await set_policy(console, "tool", server="mrtr", tool="dies", gate=True)
        call = await console.call("mrtr", "dies", {"marker": str(marker), "times": 1})
        assert call["status"] == "awaiting_input", call
        done = await console.answer_and_settle(call, "accept")
        resent = await console.audit_payloads("call_resent")
    assert done["status"] == "interrupted", done
    assert len(_sends(log, marker)) == 1  # the approval went once, with its attestation
    assert resent == []


async def test_a_send_lost_with_its_worker_process_is_sent_again_by_another_worker(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        await _mark_idempotent(console)
        call = await console.call("mrtr", "signed", {"item": "lost"}, wait=0)
        crashing = _worker(database_url, log, fault="crash_after_send")
        assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
        with _healthy_worker(database_url, log):
            asked = await console.settle(call["id"], wait=WORKER_WAIT)
        [resent] = await console.audit_payloads("call_resent")
    assert asked["status"] == "awaiting_input", asked  # the server's question, from the second send
    signed = [r for r in read_log(log) if r["name"] == "signed" and r["arguments"] == {"item": "lost"}]
    assert len(signed) == 2
    assert resent["automatic"] is True
    assert "the console stopped after sending this request" in resent["reason"]
