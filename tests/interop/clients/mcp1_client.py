"""An agent on the official `mcp` 1.x SDK (protocol 2025-11-25: initialize and a session), run under the
interop environment "mcp-1.30"; the same contract as docs/examples/gateway_python.py (CONSOLE_MCP_URL,
CONSOLE_TOKEN, TOOL, ARGUMENTS; prints "tools: ..." and "result: ..." or "error: ...")."""

import asyncio
import json
import os
import sys
from datetime import timedelta

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


def say(*words: object) -> None:
    sys.stdout.write(" ".join(str(word) for word in words) + "\n")
    sys.stdout.flush()


async def waiting(progress: float, total: float | None, message: str | None) -> None:
    say("waiting:", message)


async def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['CONSOLE_TOKEN']}"}
    url = os.environ["CONSOLE_MCP_URL"]
    async with (
        streamablehttp_client(url, headers=headers) as (read, write, _),
        ClientSession(read, write, read_timeout_seconds=timedelta(seconds=330)) as session,
    ):
        initialized = await session.initialize()
        say("protocol:", initialized.protocolVersion)
        tools = await session.list_tools()
        say("tools:", " ".join(sorted(tool.name for tool in tools.tools)))
        arguments = json.loads(os.environ.get("ARGUMENTS", "{}"))
        result = await session.call_tool(os.environ["TOOL"], arguments, progress_callback=waiting)
        text = "".join(part.text for part in result.content if part.type == "text")
        say("error:" if result.isError else "result:", text)


asyncio.run(main())
