"""What an agent is told when a server's reply to a request is an error or cannot be read: the HTTP
status a server answered with, and in one sentence what was wrong with a reply, in place of the SDK's
stand-ins and the validator's report (which names its own types and links to its documentation)."""

from __future__ import annotations

import mcp.types as types
from pydantic import ValidationError

# The errors the SDK's HTTP client makes up for a reply it could not use (mcp/client/streamable_http.py).
_STAND_INS = {"Server returned an error response", "Not Found"}
_UNPARSED = ("Failed to parse JSON response", "Failed to parse SSE message")


def told(code: int, message: str, method: str, http_status: int | None) -> str:
    """The error message an agent gets for an error reply to `method` (`http_status`: the HTTP status the
    server answered it with, when that was an error)."""
    if code == types.PARSE_ERROR and message.startswith(_UNPARSED):
        return f"the server's reply to {method} is not JSON-RPC: it could not be parsed"
    if http_status is None:
        return message
    if message in _STAND_INS:
        return f"the server answered {method} with HTTP {http_status}"
    return f"{message} (the server answered {method} with HTTP {http_status})"


def invalid_result(method: str, exc: ValidationError) -> str:
    """One sentence naming the first field of a reply to `method` that is not as MCP defines it."""
    loc = exc.errors(include_url=False)[0]["loc"]
    # The path runs through the validator's names for a union and its member types (capitalised, or no
    # identifier at all); the reply's own fields (camelCase) and indexes come after the last of them.
    named = [i for i, part in enumerate(loc) if isinstance(part, str) and not _is_field(part)]
    where = ".".join(str(part) for part in loc[named[-1] + 1 if named else 0 :])
    found = f" (its {where!r} is not what MCP allows)" if where else ""
    return f"the server's reply to {method} is not a valid {method} result{found}"


def _is_field(name: str) -> bool:
    return name.isidentifier() and not name[0].isupper()
