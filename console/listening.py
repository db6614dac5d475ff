"""The listening socket every HTTP server of ours (the console, the demo and test servers) is served from,
the loop the demo, test and benchmark servers serve with, and the command line of our MCP servers."""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port (0 = any free port), for `uvicorn.Server.serve([sock])`.

    The protocol must be named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only for sockets
    whose `proto` is IPPROTO_TCP, and accepted connections inherit it from this socket. Without it, a
    response written as headers then body waits for the client's delayed ACK: about 40 ms on every
    keep-alive request.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    return sock


async def serve_and_announce(app: Any, host: str, port: int, path: str, *, backlog: int = 2048) -> None:
    """Serve `app` until stopped; once it accepts, print `listening on http://HOST:PORT{path}`.

    Test and benchmark harnesses start these servers on port 0 and read that line to learn the URL.
    """
    await serve_socket_and_announce(app, listening_socket(host, port), path, backlog=backlog)


async def serve_socket_and_announce(app: Any, sock: socket.socket, path: str, *, backlog: int = 2048) -> None:
    """`serve_and_announce` on a socket bound already (a server that must know its own address first)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=backlog)
    web = uvicorn.Server(config)
    host = str(sock.getsockname()[0])
    shown_host = f"[{host}]" if ":" in host else host
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        while not web.started:  # uvicorn offers a flag, not an event
            if web.should_exit:
                return
            await anyio.sleep(0.01)
        sys.stdout.write(f"listening on http://{shown_host}:{sock.getsockname()[1]}{path}\n")
        sys.stdout.flush()


def mcp_port(argv: Sequence[str] | None, *, description: str, prog: str | None = None) -> int | None:
    """The `--http PORT` of an MCP server's command line (0 = any free port); None to serve stdio."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT (0 = any)"
    )
    port: int | None = parser.parse_args(argv).http
    return port


def serve_mcp(server: Server[Any], port: int | socket.socket | None, **http_options: Any) -> None:
    """Serve `server` over stdio, or with a port (or a socket on it, bound already) over Streamable HTTP on
    127.0.0.1 (announced as `serve_and_announce` does), where the SDK checks Host and Origin against
    loopback (DNS rebinding); a request without Origin, as from any client that is not a browser, passes."""

    async def stdio() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    async def http(sock: socket.socket) -> None:
        app = server.streamable_http_app(host="127.0.0.1", **http_options)
        await serve_socket_and_announce(app, sock, "/mcp")

    if port is None:
        anyio.run(stdio)
    else:
        anyio.run(http, port if isinstance(port, socket.socket) else listening_socket("127.0.0.1", port))
