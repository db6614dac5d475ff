"""A minimal stdio MCP server that only speaks protocol 2025-11-25, written without the SDK.

Run:
    python tests/servers/legacy_server.py

It reads one JSON-RPC message per line on stdin and writes one per line on stdout:
* `server/discover` (the 2026-07-28 probe) -> JSON-RPC error -32601 "Method not found";
* `initialize` -> protocolVersion "2025-11-25", whatever version the client asked for;
* `tools/list` -> one tool "hello"; `tools/call` hello -> text "hello <name>";
* `ping` -> {}; any other request -> -32601; notifications and responses are ignored.
Used to check that a client reports "server speaks 2025-11-25".
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
PARSE_ERROR = -32700

HELLO_TOOL = {
    "name": "hello",
    "description": "Says hello.",
    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def initialize(params: dict[str, Any]) -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "legacy-test", "version": "1.0.0"},
    }


def list_tools(params: dict[str, Any]) -> dict[str, Any]:
    return {"tools": [HELLO_TOOL]}


def call_tool(params: dict[str, Any]) -> dict[str, Any]:
    if params.get("name") != "hello":
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {params.get('name')}")
    arguments = params.get("arguments") or {}
    name = arguments.get("name", "world") if isinstance(arguments, dict) else "world"
    return {"content": [{"type": "text", "text": f"hello {name}"}], "isError": False}


def ping(params: dict[str, Any]) -> dict[str, Any]:
    return {}


HANDLERS = {"initialize": initialize, "tools/list": list_tools, "tools/call": call_tool, "ping": ping}


def handle(message: Any) -> dict[str, Any] | None:
    """Return the response to one decoded message, or None when none is owed."""
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return None  # a notification, or a response to a request we never send
    request_id = message["id"]
    handler = HANDLERS.get(message["method"])
    try:
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, "Method not found")
        params = message.get("params")
        result = handler(params if isinstance(params, dict) else {})
    except RpcError as exc:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": exc.code, "message": exc.message}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def reply(response: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(response) + "\n")
    sys.stdout.flush()


def main() -> int:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            reply({"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}})
            continue
        response = handle(message)
        if response is not None:
            reply(response)
    return 0


if __name__ == "__main__":
    sys.exit(main())
