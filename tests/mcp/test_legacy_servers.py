"""Servers that speak only MCP 2025-11-25 (built with the official mcp 1.x SDK): plain calls work over stdio
and Streamable HTTP, a question the server pushes mid-call is held open until a person answers it (or its
deadline passes), and the agent API's server list says which protocol each server speaks."""

from __future__ import annotations

import os
import shlex
import signal
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select

from console.calls.models import DispatchJob
from console.mcp.endpoint import Endpoint
from console.mcp.probe import probe
from tests.harness import (
    TEAM,
    WAIT,
    Console,
    Mrtr,
    ServerSpec,
    html,
    one,
    promote,
    result_text,
    running_console,
    seed,
    signed_in,
    text,
)
from tests.mcp.sdk1 import SERVER, install
from tests.policies.setup import set_policy
from tests.processes import ServerProcess, console_process, start_http_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]  # the first one installs mcp 1.x (pip)


@pytest.fixture(scope="module")
def sdk1_python() -> Path:
    return install()


@pytest.fixture(scope="module")
def sdk1_http(sdk1_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    stderr = tmp_path_factory.mktemp("sdk1") / "stderr.txt"
    with start_http_server([str(sdk1_python), str(SERVER)], {}, stderr) as server:
        yield server


@pytest.fixture(params=["stdio", "http"])
def old_server(request: pytest.FixtureRequest, sdk1_python: Path) -> ServerSpec:
    """The 2025-11-25 test server, over stdio (a process per test) or Streamable HTTP (one per module)."""
    if request.param == "stdio":
        return ServerSpec(command=[str(sdk1_python), str(SERVER)])
    http: ServerProcess = request.getfixturevalue("sdk1_http")
    return ServerSpec(url=http.url)


async def protocols(console: Console) -> dict[str, str]:
    response = await console.client.get("/api/v1/servers", headers=console.auth("dev"))
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return {server["name"]: server["protocol"] for server in listed}


async def test_a_plain_call_to_a_2025_11_25_server_completes(
    database_url: str, old_server: ServerSpec, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"old": old_server, "mrtr": mrtr_memory.spec}) as console:
        assert await protocols(console) == {"old": "unknown", "mrtr": "unknown"}  # never reached yet
        call = await console.call("old", "hello", {"name": "ada"})
        assert result_text(call) == "hello ada"
        assert await protocols(console) == {"old": "2025-11-25", "mrtr": "unknown"}
        assert result_text(await console.call("mrtr", "complete_now", {"x": "bo"})) == "hello bo"
        assert await protocols(console) == {"old": "2025-11-25", "mrtr": "2026-07-28"}


async def pushed(
    console: Console, tool: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call a tool of the server "old" that pushes a question: the call, waiting, and its question."""
    call = await console.call("old", tool, arguments)
    assert call["status"] == "awaiting_input", call
    return call, await console.question(call["pending"][0]["id"])


async def test_two_questions_pushed_at_once_keep_the_call_waiting_until_both_are_answered(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    async with running_console(database_url, {"old": old}) as console:
        call = await console.call("old", "two_at_once", {"item": "ship"})
        with anyio.fail_after(WAIT):
            while len(call["pending"]) < 2:
                await console.runtime.signals.wait_for_change(0.5)
                call = await console.get_call(call["id"])
        first = next(p for p in call["pending"] if p["message"] == "First ship?")
        answered = await console.answer(first["id"], "accept", {"ok": True})
        assert answered.status_code == 200, answered.text
        waiting = await console.get_call(call["id"])
        assert waiting["status"] == "awaiting_input"  # the second question still holds it
        assert [p["message"] for p in waiting["pending"]] == ["Second ship?"]
        done = await console.answer_and_settle(waiting, "decline")
    assert result_text(done) == "first: accept, second: decline"


async def test_a_prompt_held_open_for_a_person_outlasts_the_request_timeout(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    async with running_console(database_url, {"old": old}, request_timeout_seconds=2) as console:
        call = await console.request("old", "prompts/get", {"name": "note", "arguments": {"topic": "tea"}})
        assert call["status"] == "awaiting_input", call
        await anyio.sleep(3)  # the person takes longer than a request may: time passing is what is tested
        done = await console.answer_and_settle(call, "accept", {"ok": True})
    assert done["status"] == "completed", done
    assert done["result"]["messages"][0]["content"]["text"] == "Write about tea (accept)."


async def test_an_admin_says_how_long_the_server_waits_and_its_held_questions_expire_by_then(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    async with running_console(database_url, {"old": old}) as console:
        await promote(console, "lead", site_admin=True)  # only a site admin edits a stdio server
        async with signed_in(console, "lead") as lead:
            path = f"/admin/teams/{TEAM}/servers/old"
            form = {"csrf_token": lead.csrf, "transport": "stdio", "command": shlex.join(old.command or [])}
            for bad in ("soon", "0", "604801"):
                refused = await lead.client.post(path, data={**form, "hold_seconds": bad})
                assert refused.status_code == 422, refused.text
                error = text(one(html(refused), "#server-hold ~ .field-error"))
                assert error == "a whole number of seconds from 1 to 604800, or empty"
            saved = await lead.client.post(path, data={**form, "hold_seconds": "90"})
            assert saved.status_code == 303, saved.text
            shown = one(html(await lead.client.get(path)), "#server-hold")
        _, question = await pushed(console, "confirm", {"item": "release"})
        [changed] = [
            c for c in await console.audit_payloads("server_changed") if "hold_seconds" in c["changed"]
        ]
    assert shown["value"] == "90"
    held_for = datetime.fromisoformat(question["expires_at"]) - datetime.fromisoformat(question["created_at"])
    assert timedelta(seconds=85) < held_for <= timedelta(seconds=90)  # not CONSOLE_LEGACY_HOLD_SECONDS
    assert changed["hold_seconds"] == 90


async def test_a_question_the_server_pushes_is_held_open_and_answered_on_the_same_request(
    database_url: str, old_server: ServerSpec
) -> None:
    async with running_console(database_url, {"old": old_server}) as console:
        call, question = await pushed(console, "confirm", {"item": "release"})
        assert (question["live"], question["mode"], question["message"]) == (True, "form", "Confirm release?")
        held_for = datetime.fromisoformat(question["expires_at"]) - datetime.fromisoformat(
            question["created_at"]
        )
        assert timedelta(seconds=590) < held_for <= timedelta(seconds=600)  # CONSOLE_LEGACY_HOLD_SECONDS
        # Meanwhile the server answers other calls, on a connection of their own.
        assert result_text(await console.call("old", "hello", {"name": "cy"})) == "hello cy"
        done = await console.answer_and_settle(call, "accept", {"ok": True})
        [received] = await console.audit_payloads("round_received")
    assert result_text(done) == "release: accept"
    assert received["held"] is True
    assert received["input_requests"]["pushed"]["method"] == "elicitation/create"


async def test_a_held_question_unanswered_in_time_tells_the_server_its_expiry_action(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    async with running_console(database_url, {"old": old}, legacy_hold_seconds=1) as console:
        call, _ = await pushed(console, "confirm", {"item": "release"})
        done = await console.settle(call["id"], after_round=call["round"])
        question = await console.question(call["pending"][0]["id"])
    assert result_text(done) == "release: cancel"  # the policy's expiry action
    assert question["status"] == "expired"


async def test_a_pushed_link_is_its_owners_and_the_servers_done_notice_answers_it(
    database_url: str, old_server: ServerSpec
) -> None:
    async with running_console(database_url, {"old": old_server}) as console:
        call = await console.call("old", "connect", {"site": "crm"})
        assert call["status"] == "awaiting_input", call
        link_id = call["pending"][0]["id"]
        refused = await console.client.get(f"/api/v1/elicitations/{link_id}", headers=console.auth("lead"))
        assert refused.status_code == 404  # a link is for the person whose agent asked, no one else
        question = await console.question(link_id, who="dev")
        assert (question["live"], question["mode"]) == (True, "url")
        assert question["url"].startswith("https://crm.example/connect/")
        opened = await console.answer_and_settle(call, "accept", who="dev")

        # The site tells the server its user finished there: nobody has to say so in the console.
        told = await console.call("old", "connect", {"site": "mail", "done_after_ms": 1})
        if told["status"] == "awaiting_input":  # the notice may land before the call is first read
            told = await console.settle(told["id"], after_round=told["round"])
        accepted = await console.client.get(
            "/api/v1/elicitations", params={"status": "accepted"}, headers=console.auth("dev")
        )
    assert result_text(opened) == "crm: accept"
    assert result_text(told) == "mail: accept"
    by_message = {q["message"]: q for q in accepted.json()["items"]}
    assert by_message["Connect your crm account"]["decided_where"] == "through the API"
    assert by_message["Connect your mail account"]["decided_where"].startswith("by the server")


async def test_a_console_restart_while_a_question_is_held_interrupts_the_call_and_the_question_says_so(
    database_url: str, sdk1_http: ServerProcess, tmp_path: Path
) -> None:
    tokens = await seed(database_url, {"old": ServerSpec(url=sdk1_http.url)})
    env = {"CONSOLE_LEASE_SECONDS": "1"}  # a dead holder's lease runs out within a second
    stderr = tmp_path / "console.txt"
    with console_process(database_url, stderr, **env) as base:
        async with api_client(base, tokens["dev"]) as client:
            run = (await client.post("/api/v1/runs", json={"team": TEAM, "title": "held"})).json()
            params = {"name": "confirm", "arguments": {"item": "release"}}
            body = {"server": "old", "method": "tools/call", "params": params}
            started = await client.post(f"/api/v1/runs/{run['id']}/calls", params={"wait": WAIT}, json=body)
    call = started.json()
    assert call["status"] == "awaiting_input", call
    with console_process(database_url, stderr, **env) as base:
        async with api_client(base, tokens["dev"]) as client:
            with anyio.fail_after(WAIT + 5):
                ended = (await client.get(f"/api/v1/calls/{call['id']}", params={"wait": WAIT})).json()
        async with api_client(base, tokens["lead"]) as client:
            question = (await client.get(f"/api/v1/elicitations/{call['pending'][0]['id']}")).json()
    assert ended["status"] == "interrupted", ended
    assert "held this call open for a question it pushed" in ended["error"]["message"]
    assert (question["status"], question["live"]) == ("interrupted", True)


async def test_a_server_that_dies_while_it_holds_a_question_interrupts_the_call_and_the_question(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    others = set(children_running(str(SERVER)))  # e.g. this worker's HTTP server of the same script
    async with running_console(database_url, {"old": old}) as console:
        call, question = await pushed(console, "confirm", {"item": "release"})
        [child] = set(children_running(str(SERVER))) - others  # the server's stdio process
        os.kill(child, signal.SIGKILL)
        ended = await console.settle(call["id"], after_round=call["round"])
        closed = await console.question(question["id"])
        late = await console.answer(question["id"], "accept", {"ok": True})
    assert ended["status"] == "interrupted", ended
    assert ended["error"]["message"].endswith("the outcome is unknown")
    assert (closed["status"], closed["live"]) == ("interrupted", True)
    assert late.status_code == 409, late.text  # nobody can answer what nothing waits for


def children_running(script: str) -> list[int]:
    """The process ids of this process's children running `script`."""
    found = []
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
            command = (status.parent / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == os.getpid() and script.encode() in command:
            found.append(int(status.parent.name))
    return found


def api_client(base: str, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60)


async def test_a_call_abandoned_while_held_stays_abandoned_when_the_server_answers_after_all(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SERVER)])
    async with running_console(database_url, {"old": old}) as console:
        call, _ = await pushed(console, "confirm", {"item": "release"})
        abandoned = await console.client.post(
            f"/api/v1/calls/{call['id']}/abandon", headers=console.auth("dev")
        )
        assert abandoned.status_code == 200, abandoned.text
        with anyio.fail_after(WAIT):  # the holder tells the server no, and the server ends its request
            while await job_status(console, call["id"]) != "done":
                await console.runtime.signals.wait_for_change(0.5)
        after = await console.get_call(call["id"])
        question = await console.question(call["pending"][0]["id"])
    assert after["status"] == "abandoned", after
    assert question["status"] == "superseded"


async def job_status(console: Console, call_id: str) -> str:
    async with console.runtime.factory() as session:
        query = select(DispatchJob.status).where(DispatchJob.call_id == call_id)
        return str((await session.execute(query)).scalar_one())


async def test_a_pushed_sampling_request_is_held_for_a_person_to_write_the_reply(
    database_url: str, old_server: ServerSpec
) -> None:
    async with running_console(database_url, {"old": old_server}) as console:
        await set_policy(console, "server", server="old", sampling=True)
        call, question = await pushed(console, "ask_model", {"question": "Capital of France?"})
        assert (question["mode"], question["live"]) == ("sampling", True)
        done = await console.answer_and_settle(call, "accept", {"reply": "Paris."})
    assert result_text(done) == "human said: Paris."


async def test_the_latest_progress_shows_in_the_api_and_on_the_run_page_while_the_call_waits(
    database_url: str, old_server: ServerSpec
) -> None:
    async with running_console(database_url, {"old": old_server}) as console:
        call, _ = await pushed(console, "staged", {"item": "<b>release</b>"})
        # The last notification may come after the push that holds the call; it is kept while it waits.
        with anyio.fail_after(WAIT):
            while ((waiting := await console.get_call(call["id"]))["progress"] or {}).get("progress") != 2:
                await console.runtime.signals.wait_for_change(0.5)
        async with signed_in(console, "dev") as dev:
            page = html(await dev.client.get(f"/runs/{call['run_id']}"))
        done = await console.answer_and_settle(call, "accept", {"ok": True})
        after = html(await console.client.get(f"/runs/{call['run_id']}", headers=console.auth("dev")))
    shown = {key: waiting["progress"][key] for key in ("progress", "total", "message")}
    assert shown == {"progress": 2, "total": 3, "message": "built <b>release</b>"}
    progress = one(page, f"#progress-{call['id']}")
    assert text(progress).startswith("Progress: 2 of 3 — built <b>release</b>")  # as text, not markup
    assert progress.find("b") is None
    assert result_text(done) == "<b>release</b> shipped: accept"
    assert after.select(".progress") == []  # an ended call shows its result instead


async def test_a_server_pinned_to_2026_07_28_that_speaks_only_2025_11_25_fails_to_connect_saying_so(
    sdk1_http: ServerProcess,
) -> None:
    pinned = replace(Endpoint.http(sdk1_http.url), protocol="2026-07-28")
    outcome = await probe(pinned)
    assert not outcome.ok
    assert outcome.error is not None
    assert "the server does not take MCP 2026-07-28, which its settings pin" in outcome.error
    assert (await probe(Endpoint.http(sdk1_http.url))).protocol == "2025-11-25"  # unpinned it connects
