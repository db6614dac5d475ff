"""Test MCP server "failing": connects and lists its tools like any other, then answers their calls as a
broken server would. Streamable HTTP only, each reply one JSON body.

Run:
    python tests/servers/failing_server.py --http 0

It prints `listening on http://127.0.0.1:<port>/mcp` once it accepts connections.

Tools (each call is answered before the MCP server sees it):
    http_status(status)   an HTTP response of that status with a short HTML body
    wrong_result()        HTTP 200 with a JSON-RPC result that is no tool result (its content a string)
    not_json()            HTTP 200, `application/json`, whose body is not JSON
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from console.listening import serve_and_announce

TOOLS = [
    types.Tool(
        name="http_status",
        input_schema={
            "type": "object",
            "properties": {"status": {"type": "integer"}},
            "required": ["status"],
        },
    ),
    types.Tool(name="wrong_result", input_schema={"type": "object", "properties": {}}),
    types.Tool(name="not_json", input_schema={"type": "object", "properties": {}}),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


class Broken:
    """Answers the tools' calls itself; everything else goes to the MCP server."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        messages, body = [], b""
        while True:
            message = await receive()
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        answer = _answer(body)
        if answer is not None:
            status, content_type, text = answer
            headers = [(b"content-type", content_type), (b"content-length", str(len(text)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": text})
            return

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


def _answer(body: bytes) -> tuple[int, bytes, bytes] | None:
    try:
        request = json.loads(body)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("method") != "tools/call":
        return None
    name, arguments = request["params"]["name"], request["params"].get("arguments") or {}
    if name == "http_status":
        status = int(arguments["status"])
        return status, b"text/html", f"<html><body>error {status}</body></html>".encode()
    if name == "wrong_result":
        result = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": "not a list"}}
        return 200, b"application/json", json.dumps(result).encode()
    if name == "not_json":
        return 200, b"application/json", b"<html>this is no JSON</html>"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Failing test MCP server.")
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    options = parser.parse_args(argv)
    server: Server[Any] = Server("failing", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    app = Broken(server.streamable_http_app(host="127.0.0.1", json_response=True))
    anyio.run(serve_and_announce, app, "127.0.0.1", options.http, "/mcp")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
