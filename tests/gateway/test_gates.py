"""Approval gates through the MCP gateway, with the `mcp` 2.3 Python `Client`: a production deploy waits at
its gate for two approvers in the browser, and the demo deployer, which deploys to production only with the
console's signed approval (DEPLOY_REQUIRE_APPROVAL_JWKS pointing at this console), deploys; a decline with
a reason reaches the agent as an `isError` tool result saying who and why; without a gate nothing vouches
for the call, and the deployer refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from console.db import create_engine, session_factory
from console.transactions import transaction
from tests.gateway.agents import Heard
from tests.harness import WAIT, register_server, stdio_deployer
from tests.policies.setup import set_policy_at
from tests.site import Site, decide_in_browser, running_site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PRODUCTION = {"service": "auth-service", "environment": "production"}
DEPLOYED = "auth-service 2.4.1 is being deployed to production."


@pytest.fixture
async def site(database_url: str, tmp_path: Path, state_key: str) -> AsyncIterator[Site]:
    """A console whose deployer checks its approvals at the console's own /.well-known/jwks.json."""
    async with running_site(
        database_url, {}, tmp_path, CONSOLE_GATEWAY_HOLD_SECONDS=str(WAIT * 2)
    ) as running:
        jwks = f"{running.base}/.well-known/jwks.json"
        engine = create_engine(database_url)
        try:
            async with transaction(session_factory(engine)) as session:
                await register_server(
                    session, "deployer", stdio_deployer(state_key, DEPLOY_REQUIRE_APPROVAL_JWKS=jwks)
                )
        finally:
            await engine.dispose()
        yield running


async def gate_production(site: Site) -> None:
    await set_policy_at(
        site.database_url,
        "tool",
        server="deployer",
        tool="deploy",
        condition='environment == "production"',
        gate=True,
        required_approvals=2,
        no_self_approval=True,
    )


def texts(result: CallToolResult) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


async def deploy_while(site: Site, decide: Callable[[str], Awaitable[None]]) -> CallToolResult:
    """dev's agent deploys to production through /mcp; `decide` runs once the agent heard of the gate."""
    heard = Heard()
    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    results: list[CallToolResult] = []
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport) as agent, anyio.create_task_group() as tasks:

        async def call() -> None:
            results.append(
                await agent.call_tool("deployer__deploy", PRODUCTION, progress_callback=heard.progress)
            )

        tasks.start_soon(call)
        question = await heard.question_id()
        assert any("2 approvers of platform, not dev" in message for message in heard.messages)
        await decide(question)
    return results[0]


async def test_a_gated_production_deploy_waits_for_two_approvers_and_the_deployer_checks_their_approval(
    site: Site,
) -> None:
    await gate_production(site)

    async def two_approvers(question: str) -> None:
        await decide_in_browser(site, question, "lead", "accept")
        page = await site.api.get(f"/api/v1/elicitations/{question}", headers=site.auth("lead2"))
        assert (page.json()["status"], page.json()["approvals"]) == ("pending", 1)
        await decide_in_browser(site, question, "lead2", "accept")

    result = await deploy_while(site, two_approvers)
    assert (result.is_error, texts(result)) == (False, DEPLOYED)


async def test_a_decline_with_a_reason_reaches_the_model_as_an_error_result(site: Site) -> None:
    await gate_production(site)

    async def decline(question: str) -> None:
        await decide_in_browser(site, question, "lead", "decline", {"reason": "change freeze until Monday"})

    result = await deploy_while(site, decline)
    assert result.is_error
    assert texts(result) == (
        "lead declined this call at the approval gate, so it was not sent. Reason: change freeze until Monday"
    )
    assert (result.meta or {})["io.approval-console/gate"]["decided_by"] == "lead"


async def test_without_a_gate_no_approval_vouches_for_the_call_and_the_deployer_refuses(site: Site) -> None:
    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    async with http, Client(streamable_http_client(site.base + "/mcp", http_client=http)) as agent:
        result = await agent.call_tool("deployer__deploy", PRODUCTION)
    assert result.is_error
    assert texts(result).startswith("Not deployed: production needs the console's approval")
