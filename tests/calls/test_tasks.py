"""Servers that run a call as a task (the tasks extension, tests/servers/tasks_server.py): the console polls
it, asks people what it requires, answers with tasks/update, cancels it when the call is abandoned, and
ends the call as the task ends; on both databases, with the server in memory, and over stdio and Streamable
HTTP for the walk of a whole task and a server process that dies."""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from console.canonical import canonical_bytes
from tests.harness import WAIT, Console, ServerSpec, result_text, running_console
from tests.memory import memory_command
from tests.processes import read_log, start_http_server

pytestmark = pytest.mark.anyio

TASKS_SERVER = str(Path(__file__).parents[1] / "servers" / "tasks_server.py")
POLL_MS = 300


@contextmanager
def tasks_server(transport: str, tmp_path: Path) -> Iterator[tuple[ServerSpec, Path]]:
    log = tmp_path / "tasks.jsonl"
    env = {"TASKS_LOG": str(log), "TASKS_POLL_MS": str(POLL_MS)}
    if transport == "memory":
        yield ServerSpec(command=memory_command("tasks"), env=env), log
        return
    if transport == "stdio":
        yield ServerSpec(command=[sys.executable, TASKS_SERVER], env=env), log
        return
    with start_http_server([sys.executable, TASKS_SERVER], env, tmp_path / "tasks-stderr.txt") as served:
        yield ServerSpec(url=served.url), log


@asynccontextmanager
async def console_with_tasks(
    database_url: str, tmp_path: Path, transport: str = "memory"
) -> AsyncIterator[tuple[Console, Path]]:
    with tasks_server(transport, tmp_path) as (spec, log):
        async with running_console(database_url, {"tasks": spec}, dispatch_poll_seconds=0.1) as console:
            yield console, log


@pytest.mark.transport
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_task_asks_twice_and_completes_with_the_answers_sent_by_tasks_update(
    database_url: str, tmp_path: Path, transport: str
) -> None:
    async with console_with_tasks(database_url, tmp_path, transport) as (console, log):
        call = await console.call("tasks", "provision", {"name": "db"})
        assert call["status"] == "awaiting_input", call
        assert [(p["key"], p["message"]) for p in call["pending"]] == [
            ("region", "Which region should the service run in?")
        ]
        question = await console.question(call["pending"][0]["id"])
        assert (question["task"], question["live"]) == (True, False)
        second = await console.answer_and_settle(call, "accept", {"region": "eu-west"})
        assert [p["key"] for p in second["pending"]] == ["confirm"], second
        done = await console.answer_and_settle(second, "accept", {"ok": True})
        created = await console.audit_payloads("task_created")
        [completed] = await console.audit_payloads("call_completed")
        instant = await console.call("tasks", "instant", {"x": "now"})
    assert result_text(done) == "provisioned db in eu-west"
    assert "result" not in completed  # only its digest, as of any result
    assert completed["result_sha256"] == hashlib.sha256(canonical_bytes(done["result"])).hexdigest()
    assert done["round"] == 2  # each key asked once, however often the task listed it
    assert done["progress"]["message"] == "task completed"
    assert result_text(instant) == "instant now"  # the server decides: no task for this one
    assert [c["status"] for c in created] == ["working"]

    requests = read_log(log)
    task_id = next(r["subject"] for r in requests if r["method"] == "tasks/get")
    about_task = [r for r in requests if r["method"].startswith("tasks/")]
    assert {r["subject"] for r in about_task} == {task_id}
    assert all(r["declared"] for r in requests)  # every request declares the extension
    if transport == "http":
        assert {r["mcp_name"] for r in about_task} == {task_id}  # routed by the task's id
    updates = [r for r in about_task if r["method"] == "tasks/update"]
    assert len(updates) == 2
    polls = [r["t"] for r in about_task if r["method"] == "tasks/get"]
    gaps = [later - earlier for earlier, later in zip(polls, polls[1:], strict=False)]
    assert min(gaps) >= POLL_MS / 1000 * 0.9, gaps  # no faster than the task asked


async def test_a_declined_question_reaches_the_task_which_completes_with_it(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_tasks(database_url, tmp_path) as (console, _):
        call = await console.call("tasks", "provision", {"name": "cache"})
        done = await console.answer_and_settle(call, "decline")
    assert result_text(done) == "stopped at region: decline"


@pytest.mark.parametrize(
    ("tool", "status", "error"),
    [
        ("doomed", "failed", {"code": -32603, "message": "the disk is full"}),
        ("withdrawn", "failed", {"message": "the server cancelled the task: the operator withdrew it"}),
    ],
)
async def test_a_task_that_fails_or_is_cancelled_by_its_server_ends_the_call_so(
    database_url: str, tmp_path: Path, tool: str, status: str, error: dict[str, Any]
) -> None:
    async with console_with_tasks(database_url, tmp_path) as (console, _):
        call = await console.call("tasks", tool, {})
    assert call["status"] == status, call
    assert call["error"] == error


async def test_abandoning_a_working_task_sends_tasks_cancel_once_and_an_auditor_may_not(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_tasks(database_url, tmp_path) as (console, log):
        call = await console.call("tasks", "endless", {}, wait=0)
        with anyio.fail_after(WAIT):
            while not any(r["method"] == "tasks/get" for r in read_log(log)):
                await console.get_call(call["id"], wait=1)  # bounded: returns when the call changes
        running = await console.get_call(call["id"])
        assert running["status"] == "running"
        assert running["progress"]["message"] == "task working: working on step 1"

        path = f"/api/v1/calls/{call['id']}/abandon"
        refused = await console.client.post(path, headers=console.auth("viewer"))  # an auditor
        assert refused.status_code == 403, refused.text
        unseen = await console.client.post(path, headers=console.auth("outsider"))  # another team
        assert unseen.status_code == 404, unseen.text
        abandoned = await console.client.post(path, headers=console.auth("dev"))
        assert abandoned.status_code == 200, abandoned.text
        assert abandoned.json()["status"] == "abandoned"
        with anyio.fail_after(WAIT):
            while not await console.audit_payloads("task_cancel_sent"):
                await console.runtime.signals.wait_for_change(0.5)  # the dispatcher sent it
        sent = await console.audit_payloads("task_cancel_sent")
        after = await console.get_call(call["id"])
    cancels = [r for r in read_log(log) if r["method"] == "tasks/cancel"]
    assert [(r["status"], r["declared"]) for r in cancels] == [("cancelled", True)]
    assert [s["answer"] for s in sent] == ["acknowledged"]
    assert after["status"] == "abandoned"


async def test_a_task_its_restarted_server_no_longer_knows_fails_the_call_with_the_servers_reason(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_tasks(database_url, tmp_path, "stdio") as (console, log):
        call = await console.call("tasks", "provision", {"name": "gone"})
        assert call["status"] == "awaiting_input"
        os.kill(read_log(log)[0]["pid"], signal.SIGKILL)  # its tasks lived in that process's memory
        done = await console.answer_and_settle(call, "accept", {"region": "us-east"})
    assert done["status"] == "failed", done
    assert done["error"]["message"] == "unknown or expired task"


async def test_a_server_that_reports_another_task_fails_the_call_and_its_task_is_cancelled(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_tasks(database_url, tmp_path) as (console, log):
        call = await console.call("tasks", "confused", {})
        with anyio.fail_after(WAIT):
            while not await console.audit_payloads("task_cancel_sent"):
                await console.runtime.signals.wait_for_change(0.5)  # the dispatcher sends it
    assert call["status"] == "failed", call
    assert call["error"]["message"] == "the server answered about another task"
    assert [r["method"] for r in read_log(log)][-1] == "tasks/cancel"
