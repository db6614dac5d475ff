"""A server built with the official `mcp` 1.30 SDK (MCP 2025-11-25) that answers URLElicitationRequiredError
(-32042): its link becomes a question for the run's owner alone, the call waits, and once the owner says
the link is done the request goes out again and completes; through the gateway the agent gets that result.
A server that keeps requiring links, or sends a -32042 that is not a proper link, fails the call."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.agents import Heard
from tests.harness import WAIT, Console, ServerSpec, html, result_text, running_console, signed_in
from tests.interop.foreign import python_env
from tests.site import running_site

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SERVER = Path(__file__).resolve().parent / "servers" / "links_required_server.py"


def links_server(done_file: Path) -> ServerSpec:
    python = python_env("mcp-1.30") / "python"
    return ServerSpec(command=[str(python), str(SERVER)], env={"LINK_DONE_FILE": str(done_file)})


def complete_at_the_site(done_file: Path, url: str) -> None:
    """What the link's site does once its user finished there: the server learns the link is done."""
    with done_file.open("a") as done:
        done.write(url.rsplit("/", 1)[1] + "\n")


@asynccontextmanager
async def console_with_links(database_url: str, tmp_path: Path) -> AsyncIterator[tuple[Console, Path]]:
    done_file = tmp_path / "links-done.txt"
    async with running_console(database_url, {"links": links_server(done_file)}) as console:
        yield console, done_file


async def test_a_required_link_is_the_owners_question_and_the_call_is_sent_again_once_it_is_done(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_links(database_url, tmp_path) as (console, done_file):
        call = await console.call("links", "read_files", {"path": "notes.txt"})
        assert call["status"] == "awaiting_input", call
        [link] = call["pending"]
        # Another member of the team, even an approver, can neither see nor answer the owner's link.
        seen = await console.client.get(f"/api/v1/elicitations/{link['id']}", headers=console.auth("lead"))
        assert seen.status_code == 404
        refused = await console.answer(link["id"], "accept", who="lead")
        assert refused.status_code in (403, 404), refused.text
        question = await console.question(link["id"], who="dev")
        assert (question["mode"], question["message"]) == ("url", "Authorize access to your files")
        assert question["url"].startswith("https://files.example/authorize/files-")
        async with signed_in(console, "dev") as owner:  # the consent gate shows the link, unopened
            gate = html(await owner.client.get(f"/elicitations/{link['id']}"))
            assert "files.example" in gate.get_text()

        complete_at_the_site(done_file, question["url"])
        done = await console.answer_and_settle(call, "accept", who="dev")
        retried = await console.audit_payloads("request_retried")
    assert result_text(done) == "contents of notes.txt"
    assert [(p["round"], p["job"], p["reason"]) for p in retried] == [
        (1, "initial", "the server required links, now done")
    ]


async def test_the_servers_done_notice_for_a_required_link_sends_the_call_again_by_itself(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_links(database_url, tmp_path) as (console, done_file):
        call = await console.call("links", "read_mail", {"folder": "inbox"})
        assert call["status"] == "awaiting_input", call
        [link] = call["pending"]
        question = await console.question(link["id"], who="dev")
        complete_at_the_site(done_file, question["url"])  # nobody says so in the console
        done = await console.settle(call["id"], after_round=call["round"])
        accepted = await console.question(link["id"], who="dev")
    assert result_text(done) == "mail in inbox"
    assert (accepted["status"], accepted["decided_where"][:13]) == ("accepted", "by the server")


HOSTILE = {
    "javascript": "has a URL that is not http(s): 'javascript:alert(document.cookie)'",
    "huge": "the server required 1000 links (-32042); at most 5 are shown",
    "malformed": "its data.elicitations lists none",
    "no_id": "data.elicitations[0].elicitationId is not valid",
}


async def test_a_server_that_keeps_requiring_links_or_sends_hostile_ones_fails_the_call(
    database_url: str, tmp_path: Path
) -> None:
    async with console_with_links(database_url, tmp_path) as (console, _):
        call = await console.call("links", "always_required", {})
        for round_n in (1, 2, 3):
            assert (call["status"], call["round"]) == ("awaiting_input", round_n), call
            call = await console.answer_and_settle(call, "accept", who="dev")
        run_id = await console.new_run("dev")
        hostile = {
            kind: await console.call("links", "hostile", {"kind": kind}, run_id=run_id) for kind in HOSTILE
        }
        pending = await console.pending_questions("dev")
        async with signed_in(console, "dev") as owner:
            run_page = html(await owner.client.get(f"/runs/{run_id}"))
    assert call["status"] == "failed", call
    assert call["error"]["message"] == (
        "the server still required links (-32042) after 3 rounds of them were done, "
        "so the call was not sent again"
    )
    for kind, said in HOSTILE.items():
        assert hostile[kind]["status"] == "failed", hostile[kind]
        assert said in hostile[kind]["error"]["message"], kind
        assert "data" not in hostile[kind]["error"]  # what the server sent is not passed on, nor shown
    assert pending == []  # no question was asked for any of them
    shown = run_page.get_text()
    assert "javascript:alert(document.cookie)" in shown  # named as text in the failure, never a link
    assert not run_page.select('[href^="javascript:"]')


async def test_through_the_gateway_the_agent_gets_the_result_once_the_owner_did_the_link(
    database_url: str, tmp_path: Path
) -> None:
    done_file = tmp_path / "links-done.txt"
    servers = {"links": links_server(done_file)}
    heard = Heard()
    results: list[Any] = []
    hold = str(WAIT * 2)
    async with running_site(database_url, servers, tmp_path, CONSOLE_GATEWAY_HOLD_SECONDS=hold) as site:
        http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
        transport = streamable_http_client(site.base + "/mcp", http_client=http)
        async with http, Client(transport) as agent, anyio.create_task_group() as tg:

            async def read() -> None:
                arguments = {"path": "plans.md"}
                results.append(
                    await agent.call_tool("links__read_files", arguments, progress_callback=heard.progress)
                )

            tg.start_soon(read)
            # While it waits, the agent hears of the owner's question, never the server's -32042.
            link = await site.api.get(
                f"/api/v1/elicitations/{await heard.question_id()}", headers=site.auth("dev")
            )
            assert link.status_code == 200, link.text
            complete_at_the_site(done_file, link.json()["url"])
            answered = await site.answer(link.json()["id"], "accept", who="dev")
            assert answered.status_code == 200, answered.text
    [result] = results
    assert not result.is_error
    assert "".join(part.text for part in result.content if part.type == "text") == "contents of plans.md"
