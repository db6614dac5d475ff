"""A small MCP server on the official `mcp` 1.x SDK (FastMCP), over stdio; protocol 2025-11-25 at most.

No `from __future__ import annotations`: mcp 1.12 finds the Context parameter by its evaluated annotation.

Tools:
    greet(name)     "hello <name>"; asks nothing
    confirm(item)   pushes elicitation/create "Ship <item>?" (boolean ok) mid-call and returns
                    "<item>: <action> ok=<ok>"
"""

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

server = FastMCP("interop-mcp1")


class Confirmation(BaseModel):
    ok: bool


@server.tool()
def greet(name: str) -> str:
    return f"hello {name}"


@server.tool()
async def confirm(item: str, ctx: Context) -> str:  # type: ignore[type-arg]
    answer = await ctx.elicit(f"Ship {item}?", schema=Confirmation)
    data = getattr(answer, "data", None)
    return f"{item}: {answer.action} ok={getattr(data, 'ok', None)}"


if __name__ == "__main__":
    server.run()
