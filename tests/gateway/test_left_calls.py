"""A 2025-11-25 agent that leaves without a word gave up: when the response stream of its held request
closed and it neither resumed it (Last-Event-ID) nor sent anything on its session within
CONSOLE_GATEWAY_RETURN_SECONDS, the call is withdrawn as if it had cancelled, so an approver's later
answer runs nothing. An agent that comes back in time keeps its call, and so does one whose stream the
console itself closed for it to resume (SEP-1699 polling)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.gateway.conftest import gateway_site
from tests.gateway.test_inspector_waits import INSPECTOR_TIMEOUT
from tests.gateway.test_polling import Resumes, deploy_and_decide
from tests.gateway.test_withdrawals import TOOL, asked, assert_withdrawn, gate, inspector
from tests.harness import WAIT, Browser, Mrtr, html, one, sign_in, text
from tests.interop.foreign import node_tools
from tests.processes import requests_with
from tests.site import Site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RETURN_SECONDS = 3
LEFT = f"the agent's connection closed and it did not come back within {RETURN_SECONDS} s"
PROTOCOL = "2025-11-25"


@pytest.fixture
async def site(database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str) -> AsyncIterator[Site]:
    """The gateway giving an agent whose connection closed RETURN_SECONDS to come back, and holding a
    request past the Inspector's own timeout."""
    settings = {"CONSOLE_GATEWAY_RETURN_SECONDS": str(RETURN_SECONDS)}
    hold = INSPECTOR_TIMEOUT + WAIT * 2
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=hold, **settings) as running:
        yield running


async def test_an_inspector_stopped_while_its_call_waits_leaves_nothing_to_run(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    async with await anyio.open_process(inspector(site, x), env=node_tools().env) as agent:
        question = await asked(site)
        agent.terminate()  # its user stops it: the connection closes, no notifications/cancelled
        with anyio.fail_after(WAIT):
            await agent.wait()
    await assert_withdrawn(site, mrtr_stdio, question, x, LEFT)
    async with httpx.AsyncClient(base_url=site.base, timeout=WAIT) as client:
        lead = Browser(client)
        await sign_in(lead, "lead")
        page = await client.get(f"/elicitations/{question['id']}")
    said = f"The agent gave up on this call ({LEFT}); nothing was sent to the server."
    assert said in text(one(html(page), "#withdrawn"))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a minute of waiting: one database
async def test_an_inspector_that_gave_up_at_its_request_timeout_leaves_nothing_to_run(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    with anyio.fail_after(INSPECTOR_TIMEOUT + WAIT * 2):
        ran = await anyio.run_process(inspector(site, x), env=node_tools().env, check=False)
    assert ran.returncode != 0
    assert "timed out" in (ran.stdout + ran.stderr).decode()  # by itself, while the question waited
    await assert_withdrawn(site, mrtr_stdio, await asked(site), x, LEFT)


async def test_an_agent_that_drops_its_stream_and_resumes_it_keeps_its_call(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    async with Session(site) as session:
        call = {"name": TOOL, "arguments": {"x": x}, "_meta": {"progressToken": "left"}}
        async with session.stream("POST", _request(2, "tools/call", call)) as events:
            last_id = (await events.__anext__())["id"]  # the priming event, before anything is said
        # leaving the block closed the connection: the agent dropped its stream

        async def approve_later() -> None:
            question.update(await asked(site))
            await anyio.sleep(RETURN_SECONDS + 1)  # the time under test: past the grace, while resumed
            approved = await site.answer(question["id"], "accept", {"arguments": {"x": x}}, who="lead")
            assert approved.status_code == 200, approved.text

        question: dict[str, Any] = {}
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(approve_later)
            answer = await session.resumed_answer(last_id, 2)
    assert answer["result"]["content"][0]["text"] == f"hello {x}"
    assert (await site.get_call(question["call_id"]))["status"] == "completed"
    assert len(requests_with(mrtr_stdio.log, "x", x)) == 1


async def test_an_agent_whose_stream_the_console_closes_for_polling_keeps_its_call(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str
) -> None:
    settings = {"CONSOLE_GATEWAY_RETURN_SECONDS": str(RETURN_SECONDS), "CONSOLE_GATEWAY_POLL_SECONDS": "0.5"}
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=WAIT * 2, **settings) as site:
        resumes = Resumes(wanted=2 * RETURN_SECONDS + 1)  # closed and resumed for longer than the grace
        texts = await deploy_and_decide(site, resumes, "decline")
    assert texts == ["Deployment not started (decline)."]


async def test_an_agent_that_left_just_before_the_hold_bound_leaves_nothing_to_run(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str
) -> None:
    settings = {"CONSOLE_GATEWAY_RETURN_SECONDS": str(RETURN_SECONDS)}
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=1, **settings) as site:
        x = await gate(site)
        async with Session(site) as session:
            call = {"name": TOOL, "arguments": {"x": x}}
            async with session.stream("POST", _request(2, "tools/call", call)) as events:
                await events.__anext__()
            # dropped at once: the hold's bound passes (and the result saying the call still waits is
            # ready) before the agent was away for RETURN_SECONDS
            await assert_withdrawn(site, mrtr_stdio, await asked(site), x, LEFT)


async def test_an_agent_that_closes_its_session_gives_up_at_once(site: Site, mrtr_stdio: Mrtr) -> None:
    x = await gate(site)
    async with Session(site) as session:
        call = {"name": TOOL, "arguments": {"x": x}}
        async with session.stream("POST", _request(2, "tools/call", call)) as events:
            await events.__anext__()
            question = await asked(site)
            closed = await session.http.delete("/mcp", headers=session.headers)
            assert closed.status_code == 200, closed.text
    await assert_withdrawn(site, mrtr_stdio, question, x, "the agent cancelled")


class Session:
    """A 2025-11-25 session of dev's, spoken over plain HTTP so the test decides when a stream closes."""

    def __init__(self, site: Site) -> None:
        accept = {"Accept": "application/json, text/event-stream"}
        self.http = httpx.AsyncClient(
            base_url=site.base, headers={**site.auth("dev"), **accept}, timeout=WAIT
        )
        self.headers: dict[str, str] = {}

    async def __aenter__(self) -> Session:
        client = {"name": "leaving-agent", "version": "1.0"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": client}
        opened = await self.http.post("/mcp", json=_request(1, "initialize", params))
        assert opened.status_code == 200, opened.text
        self.headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": PROTOCOL}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        said = await self.http.post("/mcp", json=initialized, headers=self.headers)
        assert said.status_code == 202, said.text
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def resumed_answer(self, last_id: str, request_id: int) -> dict[str, Any]:
        """The answer to a request whose stream was left, resumed from `last_id` with Last-Event-ID, and
        resumed again from the newest event heard whenever the stream ends before the answer."""
        with anyio.fail_after(WAIT * 2):
            while True:
                async with self.stream("GET", resume_from=last_id) as events:
                    async for event in events:
                        last_id = event.get("id") or last_id
                        data = event.get("data")
                        if isinstance(data, dict) and data.get("id") == request_id:
                            return data
                await anyio.sleep(0.2)  # a client's pause before it reconnects, not a synchronisation

    def stream(
        self, method: str, body: dict[str, Any] | None = None, *, resume_from: str | None = None
    ) -> _Events:
        headers = {**self.headers, **({"last-event-id": resume_from} if resume_from else {})}
        return _Events(self.http.stream(method, "/mcp", json=body, headers=headers))


class _Events:
    """The server-sent events of one response, each as its fields (`id`, and `data` as JSON)."""

    def __init__(self, streaming: Any) -> None:
        self._streaming = streaming
        self._lines: AsyncIterator[str] | None = None

    async def __aenter__(self) -> _Events:
        response: httpx.Response = await self._streaming.__aenter__()
        assert response.status_code == 200, await response.aread()
        self._lines = response.aiter_lines()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._streaming.__aexit__(*exc)

    def __aiter__(self) -> _Events:
        return self

    async def __anext__(self) -> dict[str, Any]:
        assert self._lines is not None
        event: dict[str, Any] = {}
        with anyio.fail_after(WAIT):
            async for line in self._lines:
                if not line:
                    if event:
                        return event
                    continue
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                event[name] = json.loads(value) if name == "data" and value else value
        raise StopAsyncIteration


def _request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
