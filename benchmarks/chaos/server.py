"""The chaos test's MCP server: `python -m benchmarks.chaos.server LOG` prints `listening on URL`.

One tool, `ask(rid, rounds, work_ms)`: each agent request carries its own `rid`; every request takes
`work_ms` milliseconds (so kills find requests out). The first request (no
`inputResponses`) asks the form question "confirm" with requestState `<rid>:1`; each resume with state
`<rid>:<n>` completes the call on a decline or cancel, asks round n+1 on an accept while n < rounds, and
otherwise completes. Every tools/call it receives is appended to LOG as one JSON line, so the harness
counts first requests per `rid` and resumes per (`rid`, round) after the run.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext

from console.listening import serve_and_announce

TOOL = "ask"
QUESTION = "confirm"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean", "title": "Go ahead?"},
        "by": {"type": "string", "title": "Who approves"},
    },
    "required": ["ok", "by"],
}
ASK = types.Tool(
    name=TOOL,
    description="Asks `rounds` questions in a row, then completes.",
    input_schema={
        "type": "object",
        "properties": {
            "rid": {"type": "string"},
            "rounds": {"type": "integer", "minimum": 1},
            "work_ms": {"type": "integer", "minimum": 0},
        },
        "required": ["rid", "rounds"],
    },
)


class RequestLog:
    """One JSON line per request, each written with a single O_APPEND write (readable at any time)."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(self, rid: str, round_: int, response: Any, state: str | None) -> None:
        entry = {"t": time.time(), "rid": rid, "round": round_, "response": response, "state": state}
        data = (json.dumps(entry) + "\n").encode()
        while data:
            data = data[os.write(self._fd, data) :]


def _question(rid: str, n: int) -> types.InputRequiredResult:
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=f"Go ahead with {rid}, round {n}?", requested_schema=SCHEMA
        )
    )
    return types.InputRequiredResult(input_requests={QUESTION: question}, request_state=f"{rid}:{n}")


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def answer_round(
    rid: str, rounds: int, state: str | None, response: Any
) -> types.CallToolResult | types.InputRequiredResult:
    """What the server answers a request of `rid` that carries `state` and `response` (None: the first)."""
    if state is None:
        return _question(rid, 1)
    n = int(state.rpartition(":")[2])
    action = response.get("action") if isinstance(response, dict) else None
    if action == "accept" and n < rounds:
        return _question(rid, n + 1)
    return _text(f"{rid} ended at round {n}: {action}")


def build_server(log: RequestLog) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ASK])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != TOOL:
            raise ValueError(f"unknown tool {params.name}")
        arguments = params.arguments or {}
        rid, rounds = str(arguments["rid"]), int(arguments["rounds"])
        state = params.request_state
        # The wire form as received, not a re-serialised model.
        response = ((ctx.params or {}).get("inputResponses") or {}).get(QUESTION)
        log.record(rid, 0 if state is None else int(state.rpartition(":")[2]), response, state)
        await anyio.sleep(int(arguments.get("work_ms", 0)) / 1000)
        return answer_round(rid, rounds, state, response)

    return Server("chaos", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(log_path: str) -> None:
    app = build_server(RequestLog(log_path)).streamable_http_app(host="127.0.0.1")
    await serve_and_announce(app, "127.0.0.1", 0, "/mcp")


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1])
