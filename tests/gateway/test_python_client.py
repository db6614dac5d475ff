"""The gateway with the `mcp` 2.3 Python `Client` (MCP 2026-07-28) in front of the demo deployer and the
MRTR test server: what an agent lists, a plain call, a question answered by a person, a decline, and the
hold bound passing followed by `console__await`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.gateway.agents import DEPLOY, TARGET, Heard
from tests.harness import WAIT
from tests.site import Site, decide_in_browser

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@asynccontextmanager
async def agent(site: Site, who: str = "dev", path: str = "/mcp") -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=site.auth(who), timeout=httpx2.Timeout(30, read=WAIT * 3))
    async with http, Client(streamable_http_client(site.base + path, http_client=http)) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


async def test_an_agent_lists_every_server_prefixed_and_a_plain_call_completes(site: Site) -> None:
    async with agent(site) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"deployer__deploy", "mrtr__complete_now", "mrtr__pid", "console__await"} <= names
        result = await client.call_tool("mrtr__complete_now", {"x": "hello"})
    assert not result.is_error
    assert "hello" in text_of(result)


async def deploy_until_decided(
    site: Site, heard: Heard, action: str, fields: dict[str, str] | None
) -> CallToolResult:
    """dev's agent deploys; lead decides the question it waits for in the browser."""
    results: list[CallToolResult] = []
    async with agent(site) as client, anyio.create_task_group() as tg:

        async def deploy() -> None:
            results.append(
                await client.call_tool("deployer__deploy", DEPLOY, progress_callback=heard.progress)
            )

        tg.start_soon(deploy)
        await decide_in_browser(site, await heard.question_id(), "lead", action, fields)
    return results[0]


async def test_a_call_waits_for_an_approver_who_answers_in_the_browser(site: Site) -> None:
    heard = Heard()
    result = await deploy_until_decided(site, heard, "accept", TARGET)
    assert text_of(result) == "auth-service 2.4.1 is being deployed to staging."
    assert not result.is_error
    # While it waited, the agent heard whom it waits for and where the question is answered.
    question = await heard.question_id()
    waiting = next(m for m in heard.messages if question in m)
    assert "dev or an approver of platform" in waiting
    assert f"/elicitations/{question}" in waiting


async def test_a_decline_in_the_browser_reaches_the_agent_as_the_servers_answer(site: Site) -> None:
    result = await deploy_until_decided(site, Heard(), "decline", None)
    assert text_of(result) == "Deployment not started (decline)."


async def test_past_the_hold_the_agent_learns_it_still_waits_and_console_await_gets_the_result(
    impatient_site: Site,
) -> None:
    site = impatient_site
    async with agent(site) as client:
        waiting = await client.call_tool("deployer__deploy", DEPLOY)
        assert waiting.is_error  # not the tool's result yet
        told = (waiting.meta or {})["io.approval-console/waiting"]
        call_id, question = told["call_id"], told["questions"][0]
        assert question["waits_for"] == "dev or an approver of platform"
        assert f"/elicitations/{question['id']}" in text_of(waiting)
        assert f'console__await with {{"call_id": "{call_id}"}}' in text_of(waiting)
        again = await client.call_tool("console__await", {"call_id": call_id})
        assert again.is_error  # nobody decided yet: it still waits
        assert call_id in text_of(again)
        production = {"environment": "production", "confirm": True}
        answered = await site.answer(question["id"], "accept", production, who="lead")
        assert answered.status_code == 200, answered.text
        with anyio.fail_after(WAIT):
            done = await client.call_tool("console__await", {"call_id": call_id})
            while done.is_error:  # each wait lasts the 1 s hold at most
                done = await client.call_tool("console__await", {"call_id": call_id})
    assert text_of(done) == "auth-service 2.4.1 is being deployed to production."


async def test_an_upstream_error_reaches_the_agent_as_the_same_json_rpc_error(site: Site) -> None:
    async with agent(site) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("deployer__deploy", {"service": ""})  # the schema takes it; the server not
    assert (refused.value.code, refused.value.message) == (
        -32602,
        "argument 'service' must be a non-empty string",
    )
