"""A fastmcp 4.x server whose tool asks its question with `ctx.elicit`, which fastmcp pushes only on
MCP 2025-11-25 (on a 2026-07-28 connection it fails the call saying so). Runs over stdio, or over
Streamable HTTP with `--http PORT` (0: any free port)."""

from __future__ import annotations

import sys

from fastmcp import Context, FastMCP
from mcp_types import ElicitRequest, ElicitRequestURLParams, InputRequiredResult

mcp = FastMCP("asker")


@mcp.tool
async def release(item: str, ctx: Context) -> str:
    """Ask a person whether to release `item`, then say what they answered."""
    answer = await ctx.elicit(f"Release {item}?", response_type=bool)
    return f"{item}: {answer.action} {getattr(answer, 'data', '')}".strip()


@mcp.tool
def hello(name: str) -> str:
    return f"hello {name}"


@mcp.tool
async def connect(site: str, asks: int, ctx: Context) -> str | InputRequiredResult:
    """MCP 2026-07-28: send the user to `site`, asking for the same link on each retry until it has asked
    `asks` times (then the site's flow is done, as the server learns on its own)."""
    asked = int(ctx.request_state or 0)
    if asked >= asks:
        return f"{site}: connected after {asked} asks"
    link = ElicitRequestURLParams(
        message=f"Connect your {site} account", url=f"https://{site}.example/connect"
    )
    return InputRequiredResult(
        input_requests={"connect": ElicitRequest(params=link)}, request_state=str(asked + 1)
    )


def serve_http(port: int) -> None:
    """Serve Streamable HTTP at /mcp; print `listening on URL` once the socket accepts connections."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    sys.stdout.write(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp\n")
    sys.stdout.flush()
    server = uvicorn.Server(uvicorn.Config(mcp.http_app(path="/mcp"), log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        serve_http(int(sys.argv[2]))
    else:
        mcp.run(show_banner=False)
