"""The listening socket every HTTP server of ours (the console, the demo and test servers) is served from."""

from __future__ import annotations

import socket


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
