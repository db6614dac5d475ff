"""Errors the console raises; `web/errors.py` maps each to an HTTP status.

ConsoleError
├── NotFound              — unknown run, call, question, server, team or user (404)
├── Forbidden             — signed in, but not allowed to do this (403)
│   └── StepUpRequired    — allowed, but only after signing in again (a policy's step-up)
├── Unauthorized          — no or bad credentials (401)
├── Conflict              — someone else was first, or the state moved on (409)
├── Gone                  — the question expired (410)
├── InvalidInput          — bad input from an agent or a person, with field errors (422)
├── PayloadTooLarge       — over a size cap (413)
└── McpError              — talking to an MCP server went wrong (carries the JSON-RPC code)
    ├── McpUnavailable    — could not reach the server; nothing was sent
    ├── McpLost           — the connection broke or timed out mid-request; outcome unknown
    └── McpProtocolError  — the server answered with an error or broke the protocol
        └── ResultTooLarge — its reply was larger than the console reads (CONSOLE_MAX_RESULT_BYTES)
"""

from __future__ import annotations

from typing import Any


class ConsoleError(Exception):
    """Base of every error the console raises on purpose."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ConsoleError):
    code = "not_found"


class Unauthorized(ConsoleError):
    code = "unauthorized"


class Forbidden(ConsoleError):
    code = "forbidden"


class StepUpRequired(Forbidden):
    code = "step_up_required"


class Conflict(ConsoleError):
    code = "conflict"


class Gone(ConsoleError):
    code = "gone"


class PayloadTooLarge(ConsoleError):
    code = "payload_too_large"


class InvalidInput(ConsoleError):
    code = "invalid"

    def __init__(self, message: str, fields: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields = fields or {}


class McpError(ConsoleError):
    """An MCP exchange failed; `code` is the JSON-RPC error code when there is one."""

    def __init__(self, message: str, *, rpc_code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.data = data

    def as_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.rpc_code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class McpUnavailable(McpError):
    """`http_status` is the HTTP server's refusal (401, 404, ...) when that is why no connection was made."""

    code = "mcp_unavailable"

    def __init__(self, message: str, *, rpc_code: int | None = None, http_status: int | None = None) -> None:
        super().__init__(message, rpc_code=rpc_code)
        self.http_status = http_status


class McpLost(McpError):
    code = "mcp_lost"


class McpProtocolError(McpError):
    code = "mcp_protocol_error"


class ResultTooLarge(McpProtocolError):
    """The server's reply passed the console's limit and was not read: the request fails for it, never
    for the server's state (so a resume that meets it is not restarted)."""

    code = "result_too_large"
