"""An agent on the `fastmcp` client (2.x on mcp 1.x, or 4.x on mcp 2.x), connected the way its users do:
`Client(config)` with an `mcpServers` entry carrying the bearer token in `headers`, and an elicitation
handler. It runs under the interpreter of a pinned environment (tests/interop/foreign.py), never under
the console's own. Usage:

    <fastmcp python> tests/interop/fastmcp_agent.py URL TOKEN TOOL ARGUMENTS_JSON ANSWER_JSON

It calls TOOL with ARGUMENTS; every question it is asked is answered by the handler returning ANSWER
as is (fastmcp takes a plain value as an accept with that content, `{}` too). It prints one JSON line:
`{"protocol": <version negotiated>, "asked": [{"mode", "message"}...], "result": <text>}`, or `"error":
{"code", "message", "data"}` in place of `"result"` when the call ended with a JSON-RPC error.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from fastmcp import Client


async def main(url: str, token: str, tool: str, arguments: dict[str, Any], answer: Any) -> dict[str, Any]:
    asked: list[dict[str, str]] = []

    async def handler(message: str, response_type: Any, params: Any, context: Any) -> Any:
        asked.append({"mode": getattr(params, "mode", None) or "form", "message": message})
        return answer

    config = {"mcpServers": {"console": {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}}
    out: dict[str, Any] = {"asked": asked}
    async with Client(config, elicitation_handler=handler) as client:
        out["protocol"] = protocol_of(client)
        try:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
        except Exception as exc:  # the JSON-RPC error, as each fastmcp version raises it
            error = getattr(exc, "error", None)
            if error is None:
                raise
            out["error"] = {"code": error.code, "message": error.message, "data": error.data}
        else:
            out["result"] = "".join(getattr(part, "text", "") for part in result.content)
    return out


def protocol_of(client: Client) -> str | None:
    version = getattr(client, "protocol_version", None)  # fastmcp 4
    if version is None:  # fastmcp 2: what initialize agreed
        version = client.initialize_result.protocolVersion
    return str(version)


if __name__ == "__main__":
    url, token, tool, arguments, answer = sys.argv[1:6]
    printed = asyncio.run(main(url, token, tool, json.loads(arguments), json.loads(answer)))
    sys.stdout.write(json.dumps(printed) + "\n")
