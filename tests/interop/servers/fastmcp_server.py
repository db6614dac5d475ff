"""A small MCP server on `fastmcp` (2.x or 4.x, whichever environment runs it), over stdio.

Tools:
    greet(name)     "hello <name>"; asks nothing
    confirm(item)   asks "Ship <item>?" as a form (boolean ok) and returns "<item>: <action> ok=<ok>"
"""

from __future__ import annotations

from dataclasses import dataclass

from fastmcp import Context, FastMCP

server = FastMCP("interop-fastmcp")


@dataclass
class Confirmation:
    ok: bool


@server.tool
def greet(name: str) -> str:
    return f"hello {name}"


@server.tool
async def confirm(item: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Ship {item}?", response_type=Confirmation)
    data = getattr(answer, "data", None)
    return f"{item}: {answer.action} ok={getattr(data, 'ok', None)}"


if __name__ == "__main__":
    server.run(show_banner=False)
