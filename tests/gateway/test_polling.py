"""SEP-1699 polling: with CONSOLE_GATEWAY_POLL_SECONDS set, the gateway closes a held 2025-11-25 request's
response stream while people decide. The agent's client resumes it with Last-Event-ID, hears what was said
meanwhile, and gets the decision's result as if the stream had stayed open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.gateway.agents import DEPLOY, TARGET, Heard
from tests.gateway.conftest import gateway_site
from tests.harness import WAIT, Mrtr
from tests.site import Site, decide_in_browser

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

POLL_SECONDS = 0.5


@pytest.fixture
async def polling_site(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str
) -> AsyncIterator[Site]:
    poll = {"CONSOLE_GATEWAY_POLL_SECONDS": str(POLL_SECONDS)}
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=WAIT * 2, **poll) as running:
        yield running


class Resumes:
    """The agent's GET requests that resume a stream (they carry Last-Event-ID)."""

    def __init__(self, wanted: int) -> None:
        self.event_ids: list[str] = []
        self._wanted = wanted
        self._enough = anyio.Event()
        if wanted <= 0:
            self._enough.set()

    async def on_request(self, request: httpx2.Request) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            self.event_ids.append(request.headers["last-event-id"])
            if len(self.event_ids) >= self._wanted:
                self._enough.set()

    async def enough(self) -> None:
        with anyio.fail_after(WAIT):
            await self._enough.wait()


async def deploy_and_decide(
    site: Site, resumes: Resumes, action: str, fields: dict[str, str] | None = None
) -> list[str]:
    """dev's 2025-11-25 agent deploys; once its question is known and its stream was resumed as often as
    `resumes` wants, lead decides in the browser. The texts of the result the agent got."""
    heard = Heard()
    http = httpx2.AsyncClient(
        headers=site.auth("dev"),
        timeout=httpx2.Timeout(30, read=WAIT * 3),
        event_hooks={"request": [resumes.on_request]},
    )
    results: list[CallToolResult] = []
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, mode="legacy") as client, anyio.create_task_group() as tasks:

        async def deploy() -> None:
            result = await client.call_tool("deployer__deploy", DEPLOY, progress_callback=heard.progress)
            results.append(result)

        tasks.start_soon(deploy)
        question = await heard.question_id()
        await resumes.enough()
        await decide_in_browser(site, question, "lead", action, fields)
    return [part.text for part in results[0].content if part.type == "text"]


async def test_a_polled_agent_resumes_its_stream_and_gets_the_decision(polling_site: Site) -> None:
    resumes = Resumes(wanted=2)  # the stream was closed and resumed twice while the call waited
    texts = await deploy_and_decide(polling_site, resumes, "accept", TARGET)
    assert texts == ["auth-service 2.4.1 is being deployed to staging."]
    assert len(set(resumes.event_ids)) == len(resumes.event_ids)  # each resume went on from a newer event


async def test_without_the_setting_a_held_stream_stays_open(site: Site) -> None:
    resumes = Resumes(wanted=0)
    assert await deploy_and_decide(site, resumes, "decline") == ["Deployment not started (decline)."]
    assert resumes.event_ids == []
