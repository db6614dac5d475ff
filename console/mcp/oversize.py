"""A message from an MCP server larger than the console reads (`CONSOLE_MAX_RESULT_BYTES`).

The transports (`stdio.py`, `http_limit.py`) stop reading such a message once it passes the limit, so it
never sits whole in memory, and answer the request it belonged to in its place with the error
`too_large` builds; the connection recognises that error (`is_too_large`) and fails the request with
`ResultTooLarge`.
"""

from __future__ import annotations

import json
from typing import Any

import mcp.types as types

SETTING = "CONSOLE_MAX_RESULT_BYTES"
# Where a response names its id: the keys before its result come first in every SDK we know of.
HEAD_BYTES = 4096
_DECODER = json.JSONDecoder()


def too_large_message(limit: int) -> str:
    return f"the server's reply is larger than {SETTING} ({limit} bytes); the console stopped reading it"


def too_large_error(limit: int) -> types.ErrorData:
    return types.ErrorData(
        code=types.INTERNAL_ERROR, message=too_large_message(limit), data={"maxResultBytes": limit}
    )


def too_large(request_id: types.RequestId, limit: int) -> types.JSONRPCError:
    """The error that answers request `request_id` instead of its reply."""
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=too_large_error(limit))


def is_too_large(code: int, data: Any) -> bool:
    """Whether an error is one `too_large` made (a server that sends the same only fails its own call)."""
    return code == types.INTERNAL_ERROR and isinstance(data, dict) and set(data) == {"maxResultBytes"}


def response_id(head: bytes) -> str | int | None:
    """The id of the JSON-RPC response that `head` begins, when it names one before its result or error;
    None for a request or notification, or when the id comes later."""
    text = head[:HEAD_BYTES].decode("utf-8", "replace")
    at = _blank(text, 0)
    if not text.startswith("{", at):
        return None
    at, found = at + 1, None
    while True:
        try:
            key, at = _DECODER.raw_decode(text, _blank(text, at))
        except ValueError:
            return found
        at = _blank(text, at)
        if not isinstance(key, str) or not text.startswith(":", at) or key == "method":
            return None
        if key in ("result", "error"):
            return found
        try:
            value, at = _DECODER.raw_decode(text, _blank(text, at + 1))
        except ValueError:
            return found
        if key == "id" and isinstance(value, str | int) and not isinstance(value, bool):
            found = value
        at = _blank(text, at)
        if not text.startswith(",", at):
            return found
        at += 1


def _blank(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
