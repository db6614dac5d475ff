"""An agent that gives up on a call leaves nothing to run: once it cancelled the call, or was told it
failed, the console call ends abandoned, its question is withdrawn (the page says so), an approver's
later answer is refused and the server never gets the request. Real clients give up: the TypeScript SDK
1.32 at its request timeout on a 2025-11-25 session, the Python SDK 2.3 on 2026-07-28 when the agent
stops waiting. And the MCP Inspector CLI 2.12, whose 2025-11-25 session declares the tasks extension,
gets the result of a call that waited longer than a task would have taken to come (it cannot take one).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.db import create_engine, session_factory
from console.gateway.server import TASK_AFTER_SECONDS
from console.identity.models import User
from console.transactions import transaction
from tests.gateway.agents import Heard
from tests.harness import WAIT, Browser, Mrtr, html, one, sign_in, text
from tests.interop.foreign import NPM_FOLDER, node_tools
from tests.policies.setup import set_policy_at
from tests.processes import requests_with
from tests.site import Site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOL = "mrtr__complete_now"
NOTHING_SENT = "The agent cancelled this call; nothing was sent to the server."


async def gate(site: Site) -> str:
    """Gate the MRTR server's complete_now for an approver; the value of `x` that marks this test's call."""
    await set_policy_at(site.database_url, "tool", server="mrtr", tool="complete_now", gate=True)
    return uuid.uuid4().hex


STATE_WAIT = 60.0  # seconds: for a foreign agent to start and the console to act, on a loaded machine


async def until(check: Callable[[], Awaitable[Any]]) -> Any:
    """`check()`'s first truthy value, asked again every tenth of a second (bounded)."""
    with anyio.fail_after(STATE_WAIT):
        while True:
            found = await check()
            if found:
                return found
            await anyio.sleep(0.1)  # the console's state, read as an agent or person would poll it


async def while_running(
    argv: list[str], env: dict[str, str], meanwhile: Callable[[], Awaitable[dict[str, Any]]]
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    """Run a foreign agent's process to its end (bounded), and `meanwhile` while it runs."""
    ran: list[subprocess.CompletedProcess[bytes]] = []

    async def run() -> None:
        ran.append(await anyio.run_process(argv, env=env, check=False))

    with anyio.fail_after(STATE_WAIT + WAIT):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            done = await meanwhile()
    return ran[0], done


async def asked(site: Site) -> dict[str, Any]:
    """The gate question lead is shown once the call reached it (pending, or withdrawn already)."""

    async def pending() -> dict[str, Any] | None:
        for status in ("pending", "superseded"):  # an agent may give up before the question is seen
            listed = await site.api.get(
                "/api/v1/elicitations", params={"status": status}, headers=site.auth("lead")
            )
            questions: list[dict[str, Any]] = listed.json()["items"]
            if questions:
                return questions[0]
        return None

    found: dict[str, Any] = await until(pending)
    return found


async def assert_withdrawn(site: Site, mrtr: Mrtr, question: dict[str, Any], x: str, reason: str) -> None:
    """The call ended abandoned as the agent's doing, its question withdrawn, and nothing can make it run."""

    async def ended() -> dict[str, Any] | None:
        call = await site.get_call(question["call_id"])
        return call if call["status"] != "awaiting_input" else None

    call = await until(ended)
    assert call["status"] == "abandoned", call
    assert (await site.question(question["id"]))["status"] == "superseded"
    refused = await site.answer(question["id"], "accept", {"arguments": {"x": x}}, who="lead")
    assert refused.status_code == 409, refused.text
    assert (await site.get_call(question["call_id"]))["status"] == "abandoned"
    assert requests_with(mrtr.log, "x", x) == []  # the server never got it
    (event,) = await abandoned_events(site, question["call_id"])
    assert (event.actor_id, json.loads(event.payload_json)["reason"]) == (await user_id(site, "dev"), reason)
    assert json.loads(event.payload_json)["via"].startswith("token:")
    async with httpx.AsyncClient(base_url=site.base, timeout=60) as client:
        lead = Browser(client)
        await sign_in(lead, "lead")
        page = await client.get(f"/elicitations/{question['id']}")
    assert page.status_code == 200, page.text[:2000]
    if reason == "the agent cancelled":
        assert NOTHING_SENT in text(one(html(page), "#withdrawn"))


async def abandoned_events(site: Site, call_id: str) -> list[AuditEvent]:
    query = select(AuditEvent).where(AuditEvent.action == "call_abandoned", AuditEvent.call_id == call_id)
    return list(await in_database(site, query))


async def user_id(site: Site, name: str) -> str:
    (found,) = await in_database(site, select(User.id).where(User.name == name))
    return str(found)


async def in_database(site: Site, query: Any) -> list[Any]:
    """What `query` finds in the site's database, as the console process committed it."""
    engine = create_engine(site.database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            return list((await session.execute(query)).scalars())
    finally:
        await engine.dispose()


def inspector(site: Site, x: str, *options: str) -> list[str]:
    """The MCP Inspector CLI calling the gated tool through /mcp as dev, as docs/gateway.md shows it."""
    auth = f"Authorization: Bearer {site.tokens['dev']}"
    tool = ["--method", "tools/call", "--tool-name", TOOL, "--tool-arg", f"x={x}", *options]
    return [*node_tools().bin("mcp-inspector"), "--cli", f"{site.base}/mcp", "--header", auth, *tool]


async def test_the_inspector_gets_the_result_of_a_call_that_waited_past_when_a_task_would_have_come(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    argv = inspector(site, x)

    async def approve() -> dict[str, Any]:
        question = await asked(site)
        await anyio.sleep(TASK_AFTER_SECONDS + 1)  # the wait under test: past when a task would have come
        approved = await site.answer(question["id"], "accept", {"arguments": {"x": x}}, who="lead")
        assert approved.status_code == 200, approved.text
        return question

    ran, _ = await while_running(argv, node_tools().env, approve)
    out = ran.stdout.decode()
    assert ran.returncode == 0, out + ran.stderr.decode()
    assert f"hello {x}" in out
    assert len(requests_with(mrtr_stdio.log, "x", x)) == 1


async def test_a_typescript_sdk_agent_whose_request_timed_out_leaves_nothing_to_run(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    tools = node_tools()
    script = NPM_FOLDER / "impatient_agent.mjs"
    argv = [
        str(tools.node),
        str(script),
        f"{site.base}/mcp",
        site.tokens["dev"],
        TOOL,
        json.dumps({"x": x}),
        "2000",
    ]
    async with await anyio.open_process(argv, env=tools.env) as agent:
        question = await asked(site)
        assert agent.stdout is not None
        with anyio.fail_after(WAIT):
            said = json.loads(await BufferedByteReceiveStream(agent.stdout).receive_until(b"\n", 1 << 20))
        assert said["protocol"] == "2025-11-25"
        assert said["error"]["code"] == -32001, said  # the SDK's own timeout, after which it cancels
        await assert_withdrawn(site, mrtr_stdio, question, x, "the agent cancelled")
    # leaving the block ends its stdin: the agent closes its session and exits


async def test_a_2026_agent_that_stops_waiting_leaves_nothing_to_run(site: Site, mrtr_stdio: Mrtr) -> None:
    x = await gate(site)
    heard = Heard()
    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    async with http, Client(streamable_http_client(site.base + "/mcp", http_client=http)) as agent:
        assert agent.session.protocol_version == "2026-07-28"
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: agent.call_tool(TOOL, {"x": x}, progress_callback=heard.progress))
            question_id = await heard.question_id()
            tasks.cancel_scope.cancel()  # the agent stops waiting: its request's HTTP exchange ends
        question = await site.question(question_id)
        await assert_withdrawn(site, mrtr_stdio, question, x, "the agent cancelled")
