"""Questions the run's owner may answer alone also go to the agent's client when it declared elicitation
(here the `mcp` 2.3 Python `Client`, MCP 2026-07-28: an `input_required` result with the console's own
requestState); the first answer decides, and questions for approvers never go to the agent."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult

from tests.gateway.agents import DEPLOY, TARGET, Heard
from tests.harness import WAIT, Browser, html, one, sign_in, text
from tests.policies.setup import set_policy_at
from tests.site import Site, decide_in_browser

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
Answer = Callable[[ElicitRequestParams], Awaitable[ElicitResult]]


@asynccontextmanager
async def agent_that_asks(site: Site, answer: Answer) -> AsyncIterator[Client]:
    """dev's agent, whose client shows elicitations to dev (here: `answer` decides)."""

    async def elicitation(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return await answer(params)

    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, elicitation_callback=elicitation) as client:
        yield client


def text_of(result: CallToolResult) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


async def only_question(site: Site, status: str) -> dict[str, Any]:
    """The one deploy question in `status`, as an approver reads it."""
    response = await site.api.get(
        "/api/v1/elicitations", params={"status": status}, headers=site.auth("lead")
    )
    items: list[dict[str, Any]] = [q for q in response.json()["items"] if q["params"].get("name") == "deploy"]
    assert len(items) == 1, items
    return items[0]


async def test_the_agents_client_answers_a_question_its_owner_may_decide_and_the_call_completes(
    site: Site,
) -> None:
    asked: list[ElicitRequestParams] = []

    async def dev_chooses_production(params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"environment": "production", "confirm": True})

    async with agent_that_asks(site, dev_chooses_production) as client:
        result = await client.call_tool("deployer__deploy", DEPLOY)
    assert text_of(result) == "auth-service 2.4.1 is being deployed to production."
    assert asked[0].message == "auth-service in version 2.4.1 — deploy where?"  # the server's own question
    question = await only_question(site, "accepted")
    assert (question["decided_by"], question["decided_where"]) == ("dev", "in their agent (MCP)")
    async with httpx.AsyncClient(base_url=site.base, timeout=60) as browser:  # what lead sees on the page
        await sign_in(Browser(browser), "lead")
        outcome = one(html(await browser.get(f"/elicitations/{question['id']}")), "#outcome")
        assert "by dev in their agent (MCP)" in text(outcome)


async def test_when_a_person_answers_first_in_the_browser_the_clients_late_answer_changes_nothing(
    site: Site,
) -> None:
    shown = anyio.Event()
    release = anyio.Event()

    async def dev_is_slow(params: ElicitRequestParams) -> ElicitResult:
        shown.set()
        await release.wait()  # dev looks at the prompt while lead decides in the browser
        return ElicitResult(action="accept", content={"environment": "production", "confirm": True})

    heard = Heard()
    results: list[CallToolResult] = []
    async with agent_that_asks(site, dev_is_slow) as client, anyio.create_task_group() as tg:

        async def deploy() -> None:
            results.append(
                await client.call_tool("deployer__deploy", DEPLOY, progress_callback=heard.progress)
            )

        tg.start_soon(deploy)
        with anyio.fail_after(WAIT):
            await shown.wait()
        question = await only_question(site, "pending")
        await decide_in_browser(site, question["id"], "lead", "accept", TARGET)  # staging
        release.set()
    assert text_of(results[0]) == "auth-service 2.4.1 is being deployed to staging."
    decided = await site.question(question["id"], who="lead")
    assert (decided["status"], decided["decided_by"], decided["content"]["environment"]) == (
        "accepted",
        "lead",
        "staging",
    )
    assert decided["decided_where"] == "in the browser"


async def test_a_question_only_approvers_may_answer_never_reaches_the_agents_client(site: Site) -> None:
    await set_policy_at(site.database_url, no_self_approval=True)

    async def must_not_be_asked(params: ElicitRequestParams) -> ElicitResult:
        raise AssertionError("a question dev may not answer reached dev's agent")

    heard = Heard()
    results: list[CallToolResult] = []
    async with agent_that_asks(site, must_not_be_asked) as client, anyio.create_task_group() as tg:

        async def deploy() -> None:
            results.append(
                await client.call_tool("deployer__deploy", DEPLOY, progress_callback=heard.progress)
            )

        tg.start_soon(deploy)
        await decide_in_browser(site, await heard.question_id(), "lead", "accept", TARGET)
    assert text_of(results[0]) == "auth-service 2.4.1 is being deployed to staging."


async def test_a_sampling_request_of_an_agent_without_a_model_goes_to_people_not_to_its_client(
    site: Site,
) -> None:
    await set_policy_at(site.database_url, "server", server="mrtr", sampling=True)

    async def must_not_be_asked(params: ElicitRequestParams) -> ElicitResult:
        raise AssertionError("a sampling request reached the agent's client as a form")

    heard = Heard()
    results: list[CallToolResult] = []
    async with agent_that_asks(site, must_not_be_asked) as client, anyio.create_task_group() as tg:

        async def sample() -> None:
            results.append(
                await client.call_tool("mrtr__sample", {"payload": "hi"}, progress_callback=heard.progress)
            )

        tg.start_soon(sample)
        answered = await site.answer(await heard.question_id(), "accept", {"reply": "Hello!"}, who="lead")
        assert answered.status_code == 200, answered.text
    assert text_of(results[0]) == "sampled role=assistant model=human stop=endTurn: Hello!"
