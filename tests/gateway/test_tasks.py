"""Agents that declare the tasks extension (`io.modelcontextprotocol/tasks`): a call that waits for people
is a task they poll (`tasks/get`), answer when they may (`tasks/update`) or withdraw (`tasks/cancel`),
visible to nobody else. Raw 2026-07-28 requests: no SDK client here speaks the extension."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from tests.gateway.agents import DEPLOY, mcp, payload
from tests.harness import WAIT, Console, Mrtr, running_console, stdio_deployer

pytestmark = pytest.mark.anyio

TASKS: dict[str, Any] = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
TASKS_AND_FORMS = {**TASKS, "elicitation": {"form": {}}}


@pytest.fixture
async def console(database_url: str, mrtr_memory: Mrtr, state_key: str) -> AsyncIterator[Console]:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": mrtr_memory.spec}
    async with running_console(database_url, servers) as running:
        yield running


async def rpc(
    console: Console, method: str, params: dict[str, Any], *, who: str = "dev", capabilities: Any = TASKS
) -> dict[str, Any]:
    """The JSON-RPC message answering one request."""
    response = await mcp(console, method, params, who=who, capabilities=capabilities)
    assert response.status_code in (200, 400), response.text
    return payload(response)


async def deploy_task(console: Console, capabilities: Any = TASKS) -> dict[str, Any]:
    created = await rpc(
        console, "tools/call", {"name": "deployer__deploy", "arguments": DEPLOY}, capabilities=capabilities
    )
    task: dict[str, Any] = created["result"]
    assert task["resultType"] == "task", created
    return task


async def task_until(
    console: Console, task_id: str, status: str, capabilities: Any = TASKS
) -> dict[str, Any]:
    """Poll tasks/get, as the extension says clients do, until the task shows `status` (bounded)."""
    with anyio.fail_after(WAIT):
        while True:
            found: dict[str, Any] = (
                await rpc(console, "tasks/get", {"taskId": task_id}, capabilities=capabilities)
            )["result"]
            if found["status"] == status:
                return found
            await anyio.sleep(0.1)  # the poll interval: the protocol has the client poll


async def test_a_call_that_waits_for_a_person_is_a_task_that_completes_once_they_decide(
    console: Console,
) -> None:
    task = await deploy_task(console)
    assert task["status"] == "working"
    working = await task_until(console, task["taskId"], "working")
    assert "waits for dev or an approver of platform" in working["statusMessage"]
    question = (await console.pending_questions("lead"))[0]
    assert f"/elicitations/{question['id']}" in working["statusMessage"]
    answered = await console.answer(question["id"], "accept", {"environment": "production", "confirm": True})
    assert answered.status_code == 200, answered.text
    done = await task_until(console, task["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "auth-service 2.4.1 is being deployed to production."


async def test_a_call_that_completes_at_once_is_a_plain_result(console: Console) -> None:
    result = (await rpc(console, "tools/call", {"name": "mrtr__complete_now", "arguments": {"x": "now"}}))[
        "result"
    ]
    assert result["resultType"] == "complete"
    assert result["content"][0]["text"] == "hello now"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "approval-console"  # not upstream


async def test_cancelling_a_task_withdraws_its_question_and_ends_the_call_abandoned(console: Console) -> None:
    task = await deploy_task(console)
    question = (await console.pending_questions("lead"))[0]
    cancelled = await rpc(console, "tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["result"]["resultType"] == "complete", cancelled
    await task_until(console, task["taskId"], "cancelled")
    assert (await console.question(question["id"]))["status"] == "superseded"
    assert (await console.get_call(task["taskId"]))["status"] == "abandoned"
    (abandoned,) = await console.audit_payloads("call_abandoned")
    assert abandoned["reason"] == "the agent cancelled"
    assert abandoned["via"].startswith("token:")  # dev's agent, by its token
    late = await console.answer(question["id"], "accept", {"environment": "production", "confirm": True})
    assert late.status_code == 409, late.text
    assert (await console.get_call(task["taskId"]))["status"] == "abandoned"


async def test_a_task_the_owner_may_answer_asks_the_client_and_tasks_update_decides_it_once_it_fits(
    console: Console,
) -> None:
    task = await deploy_task(console, TASKS_AND_FORMS)
    asking = await task_until(console, task["taskId"], "input_required", TASKS_AND_FORMS)
    ((key, request),) = asking["inputRequests"].items()
    assert key == "target"  # the deployer's own key for its question
    question = (await console.pending_questions("lead"))[0]
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "auth-service in version 2.4.1 — deploy where?"
    wrong = {"action": "accept", "content": {"environment": "the moon", "confirm": True}}
    refusals = {  # what the client sent, and the field it is told of: the task still asks after each
        "inputResponses.target.content.environment": {key: wrong},
        "inputResponses.target.action": {key: {"action": "maybe"}},  # no elicitation result at all
        "inputResponses": [wrong],
    }
    for field, answers in refusals.items():
        update = {"taskId": task["taskId"], "inputResponses": answers}
        refused = await rpc(console, "tasks/update", update, capabilities=TASKS_AND_FORMS)
        assert refused["error"]["code"] == -32602, refused
        assert refused["error"]["data"]["field"] == field
        await task_until(console, task["taskId"], "input_required", TASKS_AND_FORMS)
    answer = {"action": "accept", "content": {"environment": "staging", "confirm": True}}
    update = {"taskId": task["taskId"], "inputResponses": {key: answer}}
    updated = await rpc(console, "tasks/update", update, capabilities=TASKS_AND_FORMS)
    assert updated["result"]["resultType"] == "complete", updated
    done = await task_until(console, task["taskId"], "completed", TASKS_AND_FORMS)
    assert done["result"]["content"][0]["text"] == "auth-service 2.4.1 is being deployed to staging."
    assert (await console.question(question["id"]))["decided_by"] == "dev"


async def test_nobody_else_sees_or_steers_a_task_and_tasks_need_the_extension(console: Console) -> None:
    task = await deploy_task(console)
    for who in ("lead", "viewer", "outsider"):  # another user of the team, an auditor, another team
        for method in ("tasks/get", "tasks/cancel"):
            refused = await rpc(console, method, {"taskId": task["taskId"]}, who=who)
            assert refused["error"]["code"] == -32602, refused
            assert refused["error"]["message"] == f"unknown task {task['taskId']!r}"
    undeclared = await rpc(console, "tasks/get", {"taskId": task["taskId"]}, capabilities={})
    assert undeclared["error"]["code"] == -32021
    assert (await console.get_call(task["taskId"]))["status"] == "awaiting_input"  # untouched
