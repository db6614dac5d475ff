"""Our HTTP servers' connections have Nagle's algorithm off, or every keep-alive response stalls ~40 ms."""

from __future__ import annotations

import asyncio
import socket

import pytest

from console.listening import listening_socket

pytestmark = pytest.mark.anyio


async def test_connections_accepted_on_the_listening_socket_send_small_writes_at_once() -> None:
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    def accepted(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn: socket.socket = writer.get_extra_info("socket")
        seen.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    sock = listening_socket("127.0.0.1", 0)
    server = await asyncio.start_server(accepted, sock=sock)
    async with server:
        _reader, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        nodelay = await asyncio.wait_for(seen, timeout=10)
        writer.close()
    assert nodelay != 0
