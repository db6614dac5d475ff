"""Test MCP server "sdk1-test": protocol 2025-11-25 only, built with the official `mcp` 1.x SDK (FastMCP).

It runs under the mcp 1.x interpreter that tests/mcp/sdk1.py installs into `.cache/`, never under the
console's own environment (mcp 2.x has no `mcp.server.fastmcp`).

Run:
    <mcp 1.x python> tests/servers/sdk1_server.py              # stdio
    <mcp 1.x python> tests/servers/sdk1_server.py --http 0     # Streamable HTTP on 127.0.0.1, any free port

With `--http PORT` it prints exactly one line to stdout once it accepts connections:
`listening on http://127.0.0.1:<port>/mcp`.

Tools:
    hello(name)     "hello <name>"; asks nothing
    confirm(item)   pushes elicitation/create ("Confirm <item>?", boolean ok) in the middle of the call,
                    as 2025-11-25 servers do, then returns "<item>: <action>"; when the client refuses
                    the push, the tool fails with that error
    staged(item)    reports progress 1 of 3 ("checked <item>") and 2 of 3 ("built <item>"), then asks
                    "Ship <item>?" as confirm does and returns "<item> shipped: <action>"
    connect(site, done_after_ms=0)
                    pushes a URL-mode elicitation/create ("Connect your <site> account",
                    https://<site>.example/connect/<id>) and returns "<site>: <action>"; with done_after_ms,
                    it also says the link's flow is done (notifications/elicitation/complete) that long
                    after asking, as a site does once its user finished there
    ask_model(question)
                    pushes sampling/createMessage (the question as the user's message, at most 50
                    tokens) and returns "<model> said: <text>"; fails when the client offers no sampling
    two_at_once(item)
                    pushes "First <item>?" and "Second <item>?" (boolean ok) at the same time and returns
                    "first: <action>, second: <action>"
Prompt note(topic): pushes "Write about <topic>?" (boolean ok) and returns the user message
    "Write about <topic> (<action>)."
Tools (more):
    chatty(count)   logs a debug message, then `count` info messages "line <k> of <count> <b>unsafe</b>"
                    (logger "chatty"), and returns "logged <count>"
    show_roots()    pushes roots/list in the middle of the call and returns "roots: <uri> (<name>), ..."
                    ("roots: none" for an empty list); fails when the client offers no roots
"""

from __future__ import annotations

import argparse
import socket
import sys
import uuid
from collections.abc import Sequence

import anyio
import uvicorn
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

server = FastMCP("sdk1-test")


class Confirmation(BaseModel):
    ok: bool


@server.tool()
def hello(name: str = "world") -> str:
    """Says hello."""
    return f"hello {name}"


@server.tool()
async def confirm(item: str, ctx: Context) -> str:
    """Asks the user to confirm `item` by pushing elicitation/create."""
    answer = await ctx.elicit(message=f"Confirm {item}?", schema=Confirmation)
    return f"{item}: {answer.action}"


@server.tool()
async def staged(item: str, ctx: Context) -> str:
    """Reports its progress, then asks the user to confirm shipping `item`."""
    await ctx.report_progress(1, 3, f"checked {item}")
    await ctx.report_progress(2, 3, f"built {item}")
    answer = await ctx.elicit(message=f"Ship {item}?", schema=Confirmation)
    return f"{item} shipped: {answer.action}"


@server.tool()
async def connect(site: str, ctx: Context, done_after_ms: int = 0) -> str:
    """Sends the user to `site` to connect an account, by pushing a URL-mode elicitation/create."""
    elicitation_id = uuid.uuid4().hex
    session = ctx.session

    async def done_later() -> None:
        await anyio.sleep(done_after_ms / 1000)
        await session.send_elicit_complete(elicitation_id, related_request_id=ctx.request_id)

    async with anyio.create_task_group() as tg:
        if done_after_ms:
            tg.start_soon(done_later)
        answer = await ctx.elicit_url(
            message=f"Connect your {site} account",
            url=f"https://{site}.example/connect/{elicitation_id}",
            elicitation_id=elicitation_id,
        )
    return f"{site}: {answer.action}"


@server.tool()
async def ask_model(question: str, ctx: Context) -> str:
    """Asks the client's model by pushing sampling/createMessage."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=question))
    reply = await ctx.session.create_message(messages=[message], max_tokens=50)
    text = reply.content.text if isinstance(reply.content, TextContent) else "(not text)"
    return f"{reply.model} said: {text}"


@server.tool()
async def two_at_once(item: str, ctx: Context) -> str:
    """Pushes two questions at the same time, as a server gathering answers concurrently does."""
    actions: dict[str, str] = {}

    async def ask(which: str) -> None:
        actions[which] = (await ctx.elicit(message=f"{which.title()} {item}?", schema=Confirmation)).action

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "first")
        tg.start_soon(ask, "second")
    return f"first: {actions['first']}, second: {actions['second']}"


@server.prompt()
async def note(topic: str, ctx: Context) -> str:
    """Asks whether to write about `topic` by pushing elicitation/create while the prompt is got."""
    answer = await ctx.elicit(message=f"Write about {topic}?", schema=Confirmation)
    return f"Write about {topic} ({answer.action})."


@server.tool()
async def chatty(count: int, ctx: Context) -> str:
    """Logs `count` info messages (and one debug message first)."""
    await ctx.debug("starting to chat")
    for k in range(1, count + 1):
        await ctx.log("info", f"line {k} of {count} <b>unsafe</b>", logger_name="chatty")
    return f"logged {count}"


@server.tool()
async def show_roots(ctx: Context) -> str:
    """Asks the client for its roots by pushing roots/list, and names them."""
    listed = await ctx.session.list_roots()
    named = [f"{root.uri} ({root.name})" if root.name else str(root.uri) for root in listed.roots]
    return "roots: " + (", ".join(named) or "none")


async def serve_http(port: int) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    web = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        while not web.started:  # uvicorn offers a flag, not an event
            if web.should_exit:
                return
            await anyio.sleep(0.01)
        sys.stdout.write(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp\n")
        sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="2025-11-25 test MCP server (mcp 1.x).")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
    args = parser.parse_args(argv)
    if args.http is None:
        server.run("stdio")
    else:
        anyio.run(serve_http, args.http)
    return 0


if __name__ == "__main__":
    sys.exit(main())
