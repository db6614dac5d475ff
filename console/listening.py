"""The listening socket every HTTP server of ours (the console, the demo and test servers) is served from,
and the loop the demo, test and benchmark servers serve with."""

from __future__ import annotations

import socket
import sys
from typing import Any

import anyio
import uvicorn


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
    sock = listening_socket(host, port)
    config = uvicorn.Config(app, log_level="warning", access_log=False, backlog=backlog)
    web = uvicorn.Server(config)
    shown_host = f"[{host}]" if ":" in host else host
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        while not web.started:  # uvicorn offers a flag, not an event
            if web.should_exit:
                return
            await anyio.sleep(0.01)
        sys.stdout.write(f"listening on http://{shown_host}:{sock.getsockname()[1]}{path}\n")
        sys.stdout.flush()
