"""Test MCP server "tasks-test": the tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28).

Written with the `mcp` 2.3 Python SDK's low-level server: the SDK has no tasks extension, so this server
adds the extension's three methods and returns `resultType: "task"` from tools/call itself.

Run:
    python tests/servers/tasks_server.py              # stdio
    python tests/servers/tasks_server.py --http 0     # Streamable HTTP on 127.0.0.1, any free port

Environment:
    TASKS_LOG       if set, one JSON line per tools/call and tasks/* request is appended to this file:
                    method, name or taskId, whether the request declared the extension, the Mcp-Name
                    header (HTTP), the task's status after the request, the time and the process id.
    TASKS_POLL_MS   the pollIntervalMs every task asks for (default 200).

Every task request must declare the extension in its per-request client capabilities, or it gets -32021.
Tools (each a task unless said otherwise; a task works for `TASKS_POLL_MS` before each step):
    provision(name)   asks "region" (eu-west or us-east), then "confirm" (boolean ok); then completes with
                      "provisioned <name> in <region>", or "<name> not provisioned" when ok is false;
                      declining or cancelling either question completes with "stopped at <key>: <action>"
    doomed()          fails with the JSON-RPC error -32603 "the disk is full"
    endless()         works until tasks/cancel, then is cancelled
    withdrawn()       the server cancels it itself: "the operator withdrew it"
    confused()        works, but tasks/get reports another task's id (a misbehaving server)
    instant(x)        no task: "instant <x>" at once
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from pydantic import Field

from console.listening import mcp_port, serve_mcp

SERVER_NAME = "tasks-test"
TASKS = "io.modelcontextprotocol/tasks"
MISSING_CAPABILITY = -32021
TTL_MS = 3_600_000
TASK_TOOLS = ("provision", "doomed", "endless", "withdrawn", "confused")
REGION = {
    "type": "object",
    "properties": {"region": {"type": "string", "enum": ["eu-west", "us-east"], "title": "Region"}},
    "required": ["region"],
}
CONFIRM = {
    "type": "object",
    "properties": {"ok": {"type": "boolean", "title": "Provision now"}},
    "required": ["ok"],
}


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict, alias="inputResponses")


@dataclass
class Task:
    tool: str
    arguments: dict[str, Any]
    poll_ms: int
    task_id: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    created: str = field(default_factory=lambda: _now())
    status: str = "working"
    message: str | None = None
    working_until: float = 0.0
    step: int = 0  # how many questions this task has finished asking
    asking: dict[str, Any] | None = None  # key -> input request, while input_required
    answers: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    def work(self) -> None:
        self.status, self.asking = "working", None
        self.message = f"working on step {self.step + 1}"
        self.working_until = time.monotonic() + self.poll_ms / 1000

    def advance(self) -> None:
        """What the task does once its work time passed: ask the next question, or end."""
        if self.status != "working" or time.monotonic() < self.working_until:
            return
        if self.tool in ("endless", "confused"):
            self.working_until = time.monotonic() + self.poll_ms / 1000
        elif self.tool == "doomed":
            self._end("failed", error={"code": types.INTERNAL_ERROR, "message": "the disk is full"})
        elif self.tool == "withdrawn":
            self._end("cancelled", message="the operator withdrew it")
        elif self.step == 0:
            self._ask("region", "Which region should the service run in?", REGION)
        elif self.step == 1:
            self._ask("confirm", f"Provision {self.arguments.get('name', '?')} now?", CONFIRM)
        else:
            name, region = self.arguments.get("name", "?"), self.answers["region"]["content"]["region"]
            ok = self.answers["confirm"]["content"]["ok"]
            self._complete(f"provisioned {name} in {region}" if ok else f"{name} not provisioned")

    def update(self, responses: dict[str, Any]) -> None:
        """Answers to what it asks; unknown or earlier keys are ignored, a partial set keeps it asking."""
        if self.status != "input_required" or self.asking is None:
            return
        for key, answer in responses.items():
            if key in self.asking and isinstance(answer, dict):
                self.answers[key] = answer
        if not all(key in self.answers for key in self.asking):
            return
        for key in self.asking:
            action = self.answers[key].get("action")
            if action != "accept":
                self._complete(f"stopped at {key}: {action}")
                return
        self.step += 1
        self.work()

    def cancel(self) -> None:
        if self.status not in ("completed", "failed", "cancelled"):
            self._end("cancelled", message="cancelled at the client's request")

    def _ask(self, key: str, message: str, schema: dict[str, Any]) -> None:
        self.status, self.message = "input_required", f"waiting for {key}"
        params = {"mode": "form", "message": message, "requestedSchema": schema}
        self.asking = {key: {"method": "elicitation/create", "params": params}}

    def _complete(self, text: str) -> None:
        self._end("completed")
        self.result = {"content": [{"type": "text", "text": text}], "isError": False}

    def _end(self, status: str, *, message: str | None = None, error: dict[str, Any] | None = None) -> None:
        self.status, self.message, self.asking, self.error = status, message, None, error

    def wire(self) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": _now(),
            "ttlMs": TTL_MS,
            "pollIntervalMs": self.poll_ms,
        }
        if self.message:
            shown["statusMessage"] = self.message
        if self.asking is not None:
            shown["inputRequests"] = self.asking
        if self.result is not None:
            shown["result"] = self.result
        if self.error is not None:
            shown["error"] = self.error
        return shown


class Log:
    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def record(self, ctx: ServerRequestContext[Any], subject: str, status: str | None) -> None:
        if self._path is None:
            return
        headers = getattr(ctx.request, "headers", None)
        entry = {
            "t": time.time(),
            "pid": os.getpid(),
            "method": ctx.method,
            "subject": subject,
            "declared": _declared(ctx),
            "mcp_name": headers.get("mcp-name") if headers is not None else None,
            "status": status,
        }
        with self._lock, open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _declared(ctx: ServerRequestContext[Any]) -> bool:
    capabilities = ctx.session.client_capabilities
    extensions = getattr(capabilities, "extensions", None) or {}
    return TASKS in extensions


def _require_extension(ctx: ServerRequestContext[Any]) -> None:
    if not _declared(ctx):
        raise MCPError(
            code=MISSING_CAPABILITY,
            message="this request needs the tasks extension",
            data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
        )


def build_server(log: Log, poll_ms: int) -> Server[Any]:
    tasks: dict[str, Task] = {}

    def find(params: TaskParams) -> Task:
        task = tasks.get(params.task_id)
        if task is None:
            raise MCPError(code=types.INVALID_PARAMS, message="unknown or expired task")
        return task

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        listed = [types.Tool(name=name, input_schema=schema) for name in (*TASK_TOOLS, "instant")]
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        arguments = params.arguments or {}
        if params.name == "instant":
            log.record(ctx, params.name, None)
            text = f"instant {arguments.get('x', '')}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        if params.name not in TASK_TOOLS:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        _require_extension(ctx)
        task = Task(params.name, dict(arguments), poll_ms)
        task.work()
        tasks[task.task_id] = task
        log.record(ctx, params.name, task.status)
        return {**task.wire(), "resultType": "task"}

    async def get_task(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        _require_extension(ctx)
        task = find(params)
        task.advance()
        log.record(ctx, task.task_id, task.status)
        shown = task.wire()
        if task.tool == "confused":
            shown["taskId"] = f"{task.task_id}-other"
        return {**shown, "resultType": "complete"}

    async def update_task(ctx: ServerRequestContext[Any], params: UpdateParams) -> dict[str, Any]:
        _require_extension(ctx)
        task = find(params)
        task.update(params.input_responses)
        log.record(ctx, task.task_id, task.status)
        return {"resultType": "complete"}

    async def cancel_task(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        _require_extension(ctx)
        task = find(params)
        task.cancel()
        log.record(ctx, task.task_id, task.status)
        return {"resultType": "complete"}

    server: Server[Any] = Server(
        SERVER_NAME, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    server.extensions[TASKS] = {}
    server.add_request_handler("tasks/get", TaskParams, get_task)
    server.add_request_handler("tasks/update", UpdateParams, update_task)
    server.add_request_handler("tasks/cancel", TaskParams, cancel_task)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="Tasks-extension test MCP server.")
    poll_ms = int(os.environ.get("TASKS_POLL_MS", "200"))
    serve_mcp(build_server(Log(os.environ.get("TASKS_LOG")), poll_ms), port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
