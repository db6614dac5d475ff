"""A scripted MCP agent on the official `mcp` 1.x SDK (protocol 2025-11-25: initialize, one session).

It runs under the mcp 1.x interpreter that tests/mcp/sdk1.py installs into `.cache/`, never under the
console's own environment. Usage:

    <mcp 1.x python> tests/servers/sdk1_agent.py URL TOKEN [ask]

It connects to URL with `Authorization: Bearer TOKEN`, prints `{"ready": <protocol version>}`, then
reads one JSON command per line from stdin and answers each with JSON lines on stdout:

    {"op": "list_tools"}                        -> {"tools": [names]}
    {"op": "call", "name": N, "arguments": A}   -> {"progress": message} per notification heard, then
                                                   {"result": <CallToolResult>} or
                                                   {"error": message, "code": ..., "data": ...}

With `ask` it declares elicitation (form and URL), sampling and roots: a question the server pushes is
printed as `{"asked": {"message": ..., "mode": ...}}` and answered with the next stdin line,
`{"answer": <ElicitResult>}` (what the person at this agent decided; with `"unchecked": true` it is
sent as given, even when it is no ElicitResult); a sampling request is answered
"Hello." by model "scripted-model", a roots request with the one root file:///home/dev/project.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


def emit(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


LINES = anyio.wrap_file(sys.stdin)


async def ask_the_person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    emit({"asked": {"message": params.message, "mode": getattr(params, "mode", "form") or "form"}})
    reply = json.loads(await LINES.readline())
    if reply.get("unchecked"):  # sent as given, as a client with a bug would
        return types.ElicitResult.model_construct(**reply["answer"])
    return types.ElicitResult.model_validate(reply["answer"])


async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    text = types.TextContent(type="text", text="Hello.")
    return types.CreateMessageResult(role="assistant", content=text, model="scripted-model")


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///home/dev/project"})])


async def serve(session: ClientSession) -> None:
    async for raw in LINES:
        command = json.loads(raw)
        try:
            if command["op"] == "list_tools":
                listing = await session.list_tools()
                emit({"tools": [tool.name for tool in listing.tools]})
            elif command["op"] == "call":

                async def progress(done: float, total: float | None, message: str | None) -> None:
                    emit({"progress": message})

                result = await session.call_tool(
                    command["name"], command.get("arguments"), progress_callback=progress
                )
                emit({"result": result.model_dump(mode="json", by_alias=True, exclude_none=True)})
        except McpError as exc:
            emit({"error": exc.error.message, "code": exc.error.code, "data": exc.error.data})


async def main(url: str, token: str, ask: bool) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    connection = streamablehttp_client(url, headers=headers, sse_read_timeout=600)
    callbacks: dict[str, Any] = (
        {"elicitation_callback": ask_the_person, "sampling_callback": sample, "list_roots_callback": roots}
        if ask
        else {}
    )
    async with connection as (read, write, _), ClientSession(read, write, **callbacks) as session:
        initialized = await session.initialize()
        emit({"ready": initialized.protocolVersion})
        await serve(session)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3:] == ["ask"])
