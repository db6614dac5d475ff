"""A dispatcher process killed after claiming sends once after the lease; killed after sending, the call
is interrupted and never resent silently. A console's own new call, and the resume its answer completes,
are recorded as being sent in the transaction that records them, so a console that dies after taking one
is a dispatcher killed after sending."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from console.calls.models import Call
from console.notify.models import Notice
from tests.harness import running_console, stdio_mrtr
from tests.policies.setup import set_policy
from tests.processes import WORKER_WAIT, console_process, ended, read_log, worker_process

pytestmark = pytest.mark.anyio

CRASH_EXIT_CODE = 86


def _worker(database_url: str, log: Path, *, fault: str = "", **settings: str) -> subprocess.Popen[bytes]:
    defaults = {
        "CONSOLE_ENV": "test",
        "CONSOLE_TEST_FAULT": fault,
        "CONSOLE_LEASE_SECONDS": "1",
        "CONSOLE_REQUEST_TIMEOUT_SECONDS": "2",
        "CONSOLE_DISPATCH_POLL_SECONDS": "0.1",
    }
    return worker_process(
        database_url, log.parent / f"worker-{fault or 'ok'}.txt", **{**defaults, **settings}
    )


async def _post_to_a_console_that_dies_taking_it(
    database_url: str, tmp_path: Path, path: str, body: dict[str, object], headers: dict[str, str]
) -> None:
    """POST to a `console serve` process that exits once its dispatcher took what the request queued
    (the call, or the resume an answer completed), before sending it; the agent sees the connection drop."""
    crashing = {
        "CONSOLE_ENV": "test",
        "CONSOLE_TEST_FAULT": "crash_after_claim",
        "CONSOLE_LEASE_SECONDS": "1",
        "CONSOLE_REQUEST_TIMEOUT_SECONDS": "1",
    }
    with console_process(database_url, tmp_path / "console.txt", **crashing) as base:
        async with httpx.AsyncClient(base_url=base, timeout=WORKER_WAIT) as http:
            with pytest.raises(httpx.TransportError):  # it exits while answering
                await http.post(path, json=body, headers=headers)


@contextmanager
def _healthy_worker(database_url: str, log: Path, **settings: str) -> Iterator[None]:
    """A `console worker` without faults for the block's duration."""
    healthy = _worker(database_url, log, **settings)
    try:
        yield
    finally:
        healthy.terminate()
        healthy.wait(timeout=WORKER_WAIT)


def _calls_of(log: Path, item: str) -> list[dict[str, object]]:
    return [r for r in read_log(log) if r["name"] == "signed" and r["arguments"] == {"item": item}]


async def test_worker_killed_after_claim_leaves_the_request_to_be_sent_once_after_the_lease(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        call = await console.call("mrtr", "signed", {"item": "claimed"}, wait=0)
        assert call["status"] == "running"
        crashing = _worker(database_url, log, fault="crash_after_claim")
        assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
        assert _calls_of(log, "claimed") == []  # it died before sending anything
        with _healthy_worker(database_url, log):
            waiting = await console.settle(call["id"], wait=WORKER_WAIT)
    assert waiting["status"] == "awaiting_input"
    assert len(_calls_of(log, "claimed")) == 1


async def test_console_killed_after_taking_its_own_new_call_leaves_it_interrupted_and_unsent(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        run_id = await console.new_run()
        await _post_to_a_console_that_dies_taking_it(
            database_url,
            tmp_path,
            f"/api/v1/runs/{run_id}/calls?wait=5",
            {
                "server": "mrtr",
                "method": "tools/call",
                "params": {"name": "signed", "arguments": {"item": "own"}},
            },
            console.auth("dev"),
        )
        async with console.runtime.factory() as session:
            call_id, status = (
                await session.execute(select(Call.id, Call.status).where(Call.run_id == run_id))
            ).one()
        assert status == "running"
        assert _calls_of(log, "own") == []  # recorded as being sent, then the process died
        with _healthy_worker(database_url, log):
            interrupted = await console.settle(call_id, wait=WORKER_WAIT)
        # Whether it reached the server is not known to anyone: a person decides, nothing is sent again.
        assert interrupted["status"] == "interrupted"
        assert "outcome is unknown" in interrupted["error"]["message"]
        assert _calls_of(log, "own") == []
        resent = await console.client.post(f"/api/v1/calls/{call_id}/resend", headers=console.auth("dev"))
        assert resent.status_code == 200, resent.text
    async with running_console(database_url, {}, tokens=console.tokens) as console:
        waiting = await console.settle(call_id)
    assert waiting["status"] == "awaiting_input"
    assert len(_calls_of(log, "own")) == 1


async def test_console_killed_after_taking_the_resume_its_answer_completed_leaves_it_interrupted_and_unsent(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        call = await console.call("mrtr", "signed", {"item": "answered"}, wait=0)
        with _healthy_worker(database_url, log):
            waiting = await console.settle(call["id"], wait=WORKER_WAIT)
        assert waiting["status"] == "awaiting_input"
        await _post_to_a_console_that_dies_taking_it(
            database_url,
            tmp_path,
            f"/api/v1/elicitations/{waiting['pending'][0]['id']}/answer",
            {"action": "accept", "content": {"ok": True}},
            console.auth("lead"),
        )
        async with console.runtime.factory() as session:
            status = (await session.execute(select(Call.status).where(Call.id == call["id"]))).scalar_one()
        assert status == "resuming"
        assert len(_calls_of(log, "answered")) == 1  # the first send; the resume was taken, then it died
        with _healthy_worker(database_url, log):
            interrupted = await console.settle(call["id"], after_round=waiting["round"], wait=WORKER_WAIT)
    assert interrupted["status"] == "interrupted"
    assert "outcome is unknown" in interrupted["error"]["message"]
    assert len(_calls_of(log, "answered")) == 1


async def test_worker_killed_after_send_marks_the_call_interrupted_without_resending(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        call = await console.call("mrtr", "signed", {"item": "sent"}, wait=0)
        crashing = _worker(database_url, log, fault="crash_after_send")
        assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
        assert len(_calls_of(log, "sent")) == 1  # the server got it; the outcome was never recorded
        with _healthy_worker(database_url, log):
            interrupted = await console.settle(call["id"], wait=WORKER_WAIT)
        assert interrupted["status"] == "interrupted"
        assert "outcome is unknown" in interrupted["error"]["message"]
        assert len(_calls_of(log, "sent")) == 1
        async with console.runtime.factory() as session:  # its requester is told (console/calls/fanout.py)
            told = await session.execute(select(Notice.event).where(Notice.call_id == call["id"]))
            assert told.scalars().all() == ["call.interrupted"]

        resent = await console.client.post(f"/api/v1/calls/{call['id']}/resend", headers=console.auth("dev"))
        assert resent.status_code == 200, resent.text
    async with running_console(database_url, {}, tokens=console.tokens) as console:
        waiting = await console.settle(call["id"])
    assert waiting["status"] == "awaiting_input"
    assert len(_calls_of(log, "sent")) == 2  # sent again only because a person asked for it


async def test_a_gate_approved_just_before_a_crash_is_sent_once_after_the_lease(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        await set_policy(console, "tool", server="mrtr", tool="signed", gate=True)
        call = await console.call("mrtr", "signed", {"item": "gated"}, wait=0)
        assert call["status"] == "awaiting_input"
        approved = await console.answer(call["pending"][0]["id"], "accept")
        assert approved.status_code == 200, approved.text
        crashing = _worker(database_url, log, fault="crash_after_claim")
        assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
        assert _calls_of(log, "gated") == []  # approved, taken, never sent
        with _healthy_worker(database_url, log):
            waiting = await console.settle(call["id"], after_round=0, wait=WORKER_WAIT)
    assert waiting["status"] == "awaiting_input"  # the server's own question, round 1
    assert len(_calls_of(log, "gated")) == 1


LONG_TIMEOUT = {"CONSOLE_REQUEST_TIMEOUT_SECONDS": "120"}


async def test_a_worker_that_dies_while_its_request_is_out_is_noticed_within_one_lease(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        call = await console.call("mrtr", "slow", {"seconds": 60}, wait=0)
        crashing = _worker(database_url, log, fault="crash_while_sending", **LONG_TIMEOUT)
        assert ended(crashing, WORKER_WAIT) == CRASH_EXIT_CODE
        with _healthy_worker(database_url, log, **LONG_TIMEOUT):
            # One lease (1 s) after the last heartbeat, not the request timeout (120 s) plus a lease: a
            # settle that gives up after 60 s would still see the call running.
            interrupted = await console.settle(call["id"], wait=WORKER_WAIT)
    assert interrupted["status"] == "interrupted"
    assert "outcome is unknown" in interrupted["error"]["message"]


async def test_a_request_out_for_several_leases_stays_its_senders(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": stdio_mrtr(log)}, dispatcher=False) as console:
        call = await console.call("mrtr", "slow", {"seconds": 4}, wait=0)
        with _healthy_worker(database_url, log, **LONG_TIMEOUT):  # a lease of 1 s, renewed while it waits
            done = await console.settle(call["id"], wait=WORKER_WAIT)
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "slept 4"
