"""An agent on fastmcp (2.x or 4.x) calls a tool through the console's gateway, configured as desktop
agents are, with an `mcpServers` entry.

    CONSOLE_MCP_URL=http://127.0.0.1:8000/mcp CONSOLE_TOKEN=mcpc_... \
    TOOL=deployer__deploy ARGUMENTS='{"service": "auth-service"}' python gateway_fastmcp.py
"""

import asyncio
import json
import os

from fastmcp import Client

config = {
    "mcpServers": {
        "console": {
            "transport": "http",
            "url": os.environ["CONSOLE_MCP_URL"],
            "headers": {"Authorization": f"Bearer {os.environ['CONSOLE_TOKEN']}"},
        }
    }
}


async def main() -> None:
    # A call may wait for people: allow longer than the console holds a request (300 s).
    async with Client(config, timeout=330) as agent:
        tools = await agent.list_tools()
        print("tools:", " ".join(sorted(tool.name for tool in tools)))
        arguments = json.loads(os.environ.get("ARGUMENTS", "{}"))
        result = await agent.call_tool(os.environ["TOOL"], arguments, raise_on_error=False)
        text = "".join(part.text for part in result.content if part.type == "text")
        print("error:" if result.is_error else "result:", text)


asyncio.run(main())
