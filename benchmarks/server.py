"""The benchmarks' MCP server over Streamable HTTP: `python -m benchmarks.server` prints `listening on URL`.

Tools:
    echo(x)        completes at once with "echo <x>" (no questions)
    ask(tag)       2026-07-28: asks one form question ("ok", boolean) with requestState `tag`; the resume
                   is timestamped on arrival (wall clock) and completes with "answered <tag>"
    arrivals()     JSON {tag: arrival time} of every resume so far (for answer-to-resume latency)
    hold(tag)      the pre-2026 way: pushes elicitation/create on the open request and waits for the
                   answer while the call stays open; then "held <tag> <action>"
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext

from console.listening import serve_and_announce

QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean", "title": "Go ahead?", "default": True}},
    "required": ["ok"],
}


def _tool(name: str, description: str, argument: str | None) -> types.Tool:
    properties = {argument: {"type": "string"}} if argument else {}
    schema = {"type": "object", "properties": properties, "required": [argument] if argument else []}
    return types.Tool(name=name, description=description, input_schema=schema)


TOOLS = [
    _tool("echo", "Completes at once.", "x"),
    _tool("ask", "One form question, then completes.", "tag"),
    _tool("arrivals", "When each resume of `ask` arrived.", None),
    _tool("hold", "Asks inline (pre-2026) and holds the call open until answered.", "tag"),
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def build_server() -> Server[Any]:
    arrivals: dict[str, float] = {}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        arguments = params.arguments or {}
        if params.name == "echo":
            return _text(f"echo {arguments.get('x', '')}")
        if params.name == "ask":
            tag = str(arguments.get("tag", ""))
            if params.input_responses:
                arrivals[params.request_state or tag] = time.time()
                return _text(f"answered {tag}")
            question = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=f"Go ahead with {tag}?", requested_schema=QUESTION_SCHEMA
                )
            )
            return types.InputRequiredResult(input_requests={"ok": question}, request_state=tag)
        if params.name == "arrivals":
            return _text(json.dumps(arrivals))
        if params.name == "hold":
            answer = await ctx.session.elicit_form(
                f"Go ahead with {arguments.get('tag')}?", QUESTION_SCHEMA, related_request_id=ctx.request_id
            )
            return _text(f"held {arguments.get('tag')} {answer.action}")
        raise ValueError(f"unknown tool {params.name}")

    return Server("bench", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(port: int) -> None:
    app = build_server().streamable_http_app(host="127.0.0.1")
    await serve_and_announce(app, "127.0.0.1", port, "/mcp", backlog=4096)  # B5 opens 1,000 at once


if __name__ == "__main__":
    anyio.run(serve, int(sys.argv[1]) if len(sys.argv) > 1 else 0)
