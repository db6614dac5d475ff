"""A 2026-07-28 agent may send answers with its first request (`inputResponses` without a
`requestState`). The console holds them back until the server asks and the team's policy offers that
question to the agent; only then is an answer taken, as the agent's own. An answer to a question only
approvers may decide is never taken, and keys nobody asked for are dropped."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway.agents import DEPLOY, mcp, payload
from tests.harness import Console, Mrtr, running_console, stdio_deployer
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio

ELICITATION: dict[str, Any] = {"elicitation": {"form": {}}}
PRODUCTION = {"action": "accept", "content": {"environment": "production", "confirm": True}}
UNASKED = {"action": "accept", "content": {"foo": "bar"}}


@pytest.fixture
async def console(database_url: str, mrtr_memory: Mrtr, state_key: str) -> Any:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": mrtr_memory.spec}
    async with running_console(database_url, servers, gateway_hold_seconds=1) as running:
        yield running


async def deploy_answered_early(console: Console) -> dict[str, Any]:
    params = {
        "name": "deployer__deploy",
        "arguments": DEPLOY,
        "inputResponses": {"target": PRODUCTION, "unasked_key": UNASKED},
    }
    response = await mcp(console, "tools/call", params, who="dev", capabilities=ELICITATION)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = payload(response)["result"]
    return result


async def questions(console: Console, status: str) -> list[dict[str, Any]]:
    response = await console.client.get(
        "/api/v1/elicitations", params={"status": status}, headers=console.auth("lead")
    )
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def test_an_answer_sent_with_the_first_request_decides_a_question_the_owner_may_answer(
    console: Console,
) -> None:
    result = await deploy_answered_early(console)
    assert result["resultType"] == "complete", result
    assert result["content"][0]["text"] == "auth-service 2.4.1 is being deployed to production."
    [question] = await questions(console, "accepted")
    assert (question["decided_by"], question["decided_where"]) == ("dev", "in their agent (MCP)")
    assert question["content"] == PRODUCTION["content"]


async def test_an_early_answer_never_decides_a_question_only_approvers_may_answer(console: Console) -> None:
    await set_policy(console, no_self_approval=True)
    result = await deploy_answered_early(console)
    assert result["content"][0]["text"].startswith("Waiting for a person to decide"), result
    assert "io.approval-console/waiting" in result["_meta"]
    assert [q["params"]["name"] for q in await questions(console, "pending")] == ["deploy"]
    assert await questions(console, "accepted") == []


async def test_an_early_answer_that_is_no_result_is_refused_naming_its_field_once_its_question_is_asked(
    console: Console,
) -> None:
    params = {
        "name": "deployer__deploy",
        "arguments": DEPLOY,
        "inputResponses": {"target": {"action": "maybe"}},
    }
    response = await mcp(console, "tools/call", params, who="dev", capabilities=ELICITATION)
    error = payload(response)["error"]
    assert error["code"] == -32602, error
    assert (error["data"]["field"], error["data"]["reason"]) == (
        "inputResponses.target.action",
        "must be one of accept, decline, cancel",
    )
    [question] = await questions(console, "superseded")  # asked, then withdrawn with its call
    assert (await console.get_call(question["call_id"]))["status"] == "abandoned"
    late = await console.answer(question["id"], "accept", PRODUCTION["content"], who="dev")
    assert late.status_code == 409, late.text


async def test_early_answers_that_are_no_object_are_refused_before_the_call_starts(console: Console) -> None:
    params = {"name": "deployer__deploy", "arguments": DEPLOY, "inputResponses": ["production"]}
    response = await mcp(console, "tools/call", params, who="dev", capabilities=ELICITATION)
    error = payload(response)["error"]
    assert error["code"] == -32602, error
    assert (error["data"]["field"], error["data"]["reason"]) == ("inputResponses", "must be an object")
    assert await console.pending_questions("lead") == []  # nothing was asked: the call never started
