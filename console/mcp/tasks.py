"""The tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28) on the wire: what the console
declares, the requests it sends about a task, and a task as the server reports it (untrusted, checked
here)."""

from __future__ import annotations

from typing import Any, Literal

import mcp.types as types
from mcp import ClientSession
from mcp.client.extension import ClaimContext, ResultClaim
from pydantic import ConfigDict, Field

from console.errors import McpProtocolError
from console.mcp.endpoint import Complete, Task

TASKS = "io.modelcontextprotocol/tasks"
GET, UPDATE, CANCEL = "tasks/get", "tasks/update", "tasks/cancel"
TASK_METHODS = frozenset({GET, UPDATE, CANCEL})
STATUSES = frozenset({"working", "input_required", "completed", "failed", "cancelled"})
MAX_TASK_ID_CHARS = 256
MAX_STATUS_MESSAGE_CHARS = 500  # untrusted text shown on the run page


class CreatedTask(types.Result):
    """A tools/call answered with a task (`CreateTaskResult`); its fields are checked by `task_of`."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")


class TaskResult(types.Result):
    """What a tasks/* request returns, every field kept for `task_of` to check."""

    model_config = ConfigDict(extra="allow")


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class TaskRequest(types.Request[TaskParams | UpdateParams, str]):
    name_param = "taskId"  # the extension routes tasks/* by the task id in the Mcp-Name header


async def _polled_not_resolved(result: CreatedTask, context: ClaimContext) -> types.CallToolResult:
    # The SDK asks every claim for a resolver, used only by its high-level client; the console's
    # session returns the task instead (`allow_claimed`) and its dispatcher polls durably.
    raise RuntimeError("the console's dispatcher follows tasks itself")


def session_options() -> dict[str, Any]:
    """What a ClientSession needs to declare the extension on every 2026-07-28 request and take task
    results of tools/call (older protocols get neither)."""
    claim = ResultClaim(result_type="task", model=CreatedTask, resolve=_polled_not_resolved)
    return {"extensions": {TASKS: {}}, "result_claims": {TASKS: [claim]}}


async def send_task_request(
    session: ClientSession, method: str, params: dict[str, Any], read_timeout: float | None
) -> Task | Complete:
    """Send tasks/get, tasks/update or tasks/cancel: the task for a get, an acknowledgment otherwise.

    Raises:
        MCPError: as the session raises it.  McpProtocolError: an invalid task.
    """
    typed = UpdateParams if method == UPDATE else TaskParams
    request = TaskRequest(method=method, params=typed.model_validate(params))
    result = await session.send_request(request, TaskResult, request_read_timeout_seconds=read_timeout)
    if method != GET:
        return Complete(result={})
    return task_of(result.model_dump(by_alias=True, mode="json"))


def task_of(raw: dict[str, Any]) -> Task:
    """A task from what the server sent (a `CreateTaskResult` or a `tasks/get` result).

    Raises:
        McpProtocolError: a field is missing or of the wrong kind.
    """
    task_id, status = raw.get("taskId"), raw.get("status")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID_CHARS:
        raise McpProtocolError(f"the task has no usable taskId (a string of 1 to {MAX_TASK_ID_CHARS})")
    if status not in STATUSES:
        raise McpProtocolError(f"the task's status is not one of {', '.join(sorted(STATUSES))}")
    message = raw.get("statusMessage")
    interval = raw.get("pollIntervalMs")
    requests = raw.get("inputRequests")
    result, error = raw.get("result"), raw.get("error")
    if status == "input_required" and not (isinstance(requests, dict) and requests):
        raise McpProtocolError("a task that requires input names no inputRequests")
    if status == "completed" and not isinstance(result, dict):
        raise McpProtocolError("a completed task carries no result")
    return Task(
        task_id=task_id,
        status=status,
        message=message[:MAX_STATUS_MESSAGE_CHARS] if isinstance(message, str) and message else None,
        poll_interval_ms=interval if isinstance(interval, int) and not isinstance(interval, bool) else None,
        input_requests=requests if status == "input_required" else None,
        result=result if status == "completed" else None,
        error=error if status == "failed" and isinstance(error, dict) else None,
    )
