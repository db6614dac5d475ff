"""The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) for agents that declare it: a call
that waits for people becomes a task the agent polls (`tasks/get`), answers (`tasks/update`, for the
questions its own client may take) or withdraws (`tasks/cancel`). The SDK has no server side for it.

A task is the console call itself (its id is the call's), visible only to the token's user who owns it.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field

from console.calls import service as calls
from console.calls.questions.agent_answers import pending_agent_requests
from console.calls.questions.waiting import waiting_on
from console.calls.states import CallStatus
from console.calls.withdrawal import CANCELLED, withdraw_for_agent
from console.errors import ConsoleError, NotFound
from console.gateway import context, forwarding, input_responses, offers, rounds
from console.gateway.context import Context
from console.identity import Principal
from console.transactions import transaction

TASKS = "io.modelcontextprotocol/tasks"
POLL_MS = 2000
MISSING_CAPABILITY = -32021
STATUS = {
    "completed": "completed",
    "failed": "failed",
    "interrupted": "failed",
    "abandoned": "cancelled",
    # Ended at its approval gate: the task's result is the tool result saying who decided and why.
    "declined": "completed",
    "cancelled": "completed",
}


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


def declared(ctx: Context) -> bool:
    """Whether this request's client declared the tasks extension."""
    capabilities = ctx.session.client_capabilities
    return bool(capabilities is not None and TASKS in (capabilities.extensions or {}))


def answers_with_tasks(ctx: Context) -> bool:
    """Whether a call may be answered with a task: the client declared the extension, on 2026-07-28. A
    2025-11-25 result cannot carry a task (the SDK would send the agent an internal error instead, while
    the call went on), so such a session's request is held and its questions pushed as for any other."""
    return declared(ctx) and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def created(outcome: forwarding.Outcome, base_url: str) -> dict[str, Any]:
    """The `CreateTaskResult` for a call that still runs or waits."""
    return {"resultType": "task", **_task(outcome, base_url, offered=offers.Offered.of([], outcome.asks))}


async def get_task(ctx: Context, params: TaskParams) -> dict[str, Any]:
    """The task as it stands; `input_required` with what this client may answer."""
    services, principal = _checked(ctx)
    outcome = await _outcome(services, principal, params.task_id)
    offered = _offered(ctx, principal, outcome)
    return {"resultType": "complete", **_task(outcome, services.settings.base_url, offered=offered)}


def _offered(ctx: Context, principal: Principal, outcome: forwarding.Outcome) -> offers.Offered:
    capabilities = ctx.session.client_capabilities
    mine = [w for w in outcome.waiting if offers.offerable(w, principal, capabilities)]
    return offers.Offered.of(mine, outcome.asks)


async def update_task(ctx: Context, params: TaskParams) -> dict[str, Any]:
    """Answers (`inputResponses`) for the questions the client was offered; others (unknown, decided) are
    ignored. One the console refuses fails the update, its field named (the task still waits, for a
    better answer)."""
    services, principal = _checked(ctx)
    given = input_responses.answers_in(input_responses.given())
    outcome = await _outcome(services, principal, params.task_id)
    offered = _offered(ctx, principal, outcome)
    for key, ask in offered.asks.items():
        if key in given:
            await rounds.answer_ask(services, principal, ask.id, given[key], named=f"inputResponses.{key}.")
    for key, question in offered.questions.items():
        response = given.get(key)
        if response is not None:
            await offers.apply_answer(
                services=services,
                principal=principal,
                question_id=question.id,
                response=response,
                named=f"inputResponses.{key}.",
            )
    return {"resultType": "complete"}


async def cancel_task(ctx: Context, params: TaskParams) -> dict[str, Any]:
    """Withdraw the call's open questions and end it abandoned; a call already under way or ended is
    left to finish (the extension's cancel is cooperative)."""
    services, principal = _checked(ctx)
    await _outcome(services, principal, params.task_id)
    try:
        async with transaction(services.factory) as session:
            await withdraw_for_agent(
                session=session, principal=principal, call_id=params.task_id, reason=CANCELLED
            )
    except ConsoleError as exc:
        raise context.as_mcp_error(exc) from None
    return {"resultType": "complete"}


def _checked(ctx: Context) -> tuple[forwarding.Services, Principal]:
    if not declared(ctx):
        raise MCPError(
            MISSING_CAPABILITY,
            "tasks/* needs the tasks extension declared in the request's client capabilities",
            {"requiredCapabilities": {"extensions": {TASKS: {}}}},
        )
    return context.services(ctx), context.caller(ctx)


async def _outcome(services: forwarding.Services, principal: Principal, task_id: str) -> forwarding.Outcome:
    """The call behind the task, for the person whose agent started it; anyone else learns nothing."""
    try:
        async with transaction(services.factory) as session:  # a refusal commits its record
            view = await calls.view_call(
                session=session, viewer=principal.viewer, call_id=task_id, attempt="task", own=True
            )
            waiting = await waiting_on(session=session, call_id=task_id) if view.pending else []
            asking = view.call.status == CallStatus.AWAITING_INPUT
            asks = await pending_agent_requests(session=session, call_id=task_id) if asking else []
    except NotFound:
        raise MCPError(types.INVALID_PARAMS, f"unknown task {task_id!r}") from None
    return forwarding.Outcome(view, waiting, asks)


def _task(outcome: forwarding.Outcome, base_url: str, *, offered: offers.Offered) -> dict[str, Any]:
    call = outcome.view.call
    task: dict[str, Any] = {
        "taskId": call.id,
        "status": STATUS.get(call.status, "working"),
        "createdAt": call.created_at.isoformat(),
        "lastUpdatedAt": call.updated_at.isoformat(),
        "ttlMs": None,  # as long as the call: its questions expire by their own policy
        "pollIntervalMs": POLL_MS,
    }
    if task["status"] == "completed":
        task["result"] = forwarding.tool_result(outcome, base_url)
    elif task["status"] == "failed":
        try:
            forwarding.tool_result(outcome, base_url)
        except MCPError as exc:
            task["error"] = exc.error.model_dump(mode="json", exclude_none=True)
    elif offered:
        task["status"] = "input_required"
        task["inputRequests"] = offered.input_requests()
    elif task["status"] == "working":
        task["statusMessage"] = forwarding.waiting_message(outcome.waiting, base_url)
    return task
