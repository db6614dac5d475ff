"""An agent on the Python MCP SDK (mcp 2.x) calls a tool through the console's gateway.

    CONSOLE_MCP_URL=http://127.0.0.1:8000/mcp CONSOLE_TOKEN=mcpc_... \
    TOOL=deployer__deploy ARGUMENTS='{"service": "auth-service"}' python gateway_python.py
"""

import asyncio
import json
import os

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def waiting(progress: float, total: float | None, message: str | None) -> None:
    print("waiting:", message, flush=True)  # whom the call waits for, and where they answer


async def main() -> None:
    headers = {"Authorization": f"Bearer {os.environ['CONSOLE_TOKEN']}"}
    # A call may wait for people: read for longer than the console holds a request (300 s).
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=330))
    transport = streamable_http_client(os.environ["CONSOLE_MCP_URL"], http_client=http)
    async with http, Client(transport) as agent:
        tools = await agent.list_tools()
        print("tools:", " ".join(sorted(tool.name for tool in tools.tools)))
        arguments = json.loads(os.environ.get("ARGUMENTS", "{}"))
        result = await agent.call_tool(os.environ["TOOL"], arguments, progress_callback=waiting)
        text = "".join(part.text for part in result.content if part.type == "text")
        print("error:" if result.is_error else "result:", text)


asyncio.run(main())
