"""Test MCP server "bulky": results of any size, to test what the console reads of them.

Run:
    python tests/servers/bulky_server.py                  # stdio
    python tests/servers/bulky_server.py --http 0         # Streamable HTTP (each reply an event stream)
    python tests/servers/bulky_server.py --http 0 --json  # each reply one JSON body
    python tests/servers/bulky_server.py --http 0 --json --gzip   # gzipped, whatever the client accepts

With `--http PORT` it prints `listening on http://127.0.0.1:<port>/mcp` once it accepts connections.

Tools, a prompt and a resource, each `size` bytes of "x" as text:
    bulky(size, ask_first=false)   the text as the tool's result; with ask_first, first asks "go" (boolean
                                   ok) with requestState "bulky"
    slow(seconds)                  "slept <seconds>", that many seconds later
    pid()                          this process id
Prompt bulky(size): one user message of the text. Resource template bulky://{size}: the text.
"""

from __future__ import annotations

import argparse
import gzip
import os
from collections.abc import Sequence
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from console.listening import serve_and_announce, serve_mcp

SCHEME = "bulky://"
STATE = "bulky"


def _tool(name: str, properties: dict[str, Any], required: Sequence[str] = ()) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return types.Tool(name=name, description=f"{name} (bulky test server)", input_schema=schema)


TOOLS = [
    _tool("bulky", {"size": {"type": "integer"}, "ask_first": {"type": "boolean"}}, ["size"]),
    _tool("slow", {"seconds": {"type": "number"}}, ["seconds"]),
    _tool("pid", {}),
]


def _size(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MCPError(code=types.INVALID_PARAMS, message="size must be an integer") from None


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    arguments = params.arguments or {}
    if params.name == "pid":
        return _text(str(os.getpid()))
    if params.name == "slow":
        await anyio.sleep(float(arguments["seconds"]))
        return _text(f"slept {arguments['seconds']}")
    if params.name != "bulky":
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    if arguments.get("ask_first") and params.request_state != STATE:
        go = types.ElicitRequestFormParams(
            message="Send the bulky result?",
            requested_schema={
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            },
        )
        return types.InputRequiredResult(
            input_requests={"go": types.ElicitRequest(params=go)}, request_state=STATE
        )
    return _text("x" * _size(arguments.get("size")))


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    size = types.PromptArgument(name="size", required=True)
    return types.ListPromptsResult(prompts=[types.Prompt(name="bulky", arguments=[size])])


async def get_prompt(
    ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    text = "x" * _size((params.arguments or {}).get("size"))
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.GetPromptResult(messages=[message])


async def list_resource_templates(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(uri_template=SCHEME + "{size}", name="bulky", mime_type="text/plain")
    return types.ListResourceTemplatesResult(resource_templates=[template])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    text = "x" * _size(uri.removeprefix(SCHEME))
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text)])


def build_server() -> Server[Any]:
    return Server(
        "bulky",
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


class GzipAlways:
    """Compresses every whole response body, whatever the request accepts (as a misbehaving server)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        body = bytearray()

        async def keep(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            packed = gzip.compress(bytes(body))
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
            headers += [(b"content-encoding", b"gzip"), (b"content-length", str(len(packed)).encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": packed})

        await self.app(scope, receive, keep)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Bulky test MCP server.")
    parser.add_argument("--http", type=int, metavar="PORT")
    parser.add_argument("--json", action="store_true", help="one JSON body a reply, not an event stream")
    parser.add_argument("--gzip", action="store_true", help="gzip every body (with --json)")
    options = parser.parse_args(argv)
    server = build_server()
    if options.http is None or not options.gzip:
        serve_mcp(server, options.http, json_response=options.json)
        return 0
    app = GzipAlways(server.streamable_http_app(host="127.0.0.1", json_response=True))
    anyio.run(serve_and_announce, app, "127.0.0.1", options.http, "/mcp")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
