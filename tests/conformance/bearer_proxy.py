"""A loopback proxy that adds an agent's bearer token to every request, byte for byte otherwise.

The conformance suite's server mode has no way to send an `Authorization` header, and the gateway
answers nothing without one; an agent's MCP client configuration adds it, and so does this proxy. Each
connection carries one request (`Connection: close` is set on the way in), so the proxy never parses a
body: the request head gets the header, the rest (bodies, SSE streams both ways) is copied as it comes.
Host and Origin pass unchanged, so the gateway's own checks of them are what the suite sees.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

HEAD_LIMIT = 64 * 1024
DROPPED = (b"authorization", b"connection", b"keep-alive", b"proxy-connection")


def with_token(head: bytes, token: str) -> bytes:
    """The request head with `Authorization: Bearer <token>` and `Connection: close` instead of the
    client's own values of those headers."""
    request_line, *fields = head.rstrip(b"\r\n").split(b"\r\n")
    kept = [line for line in fields if line.split(b":", 1)[0].strip().lower() not in DROPPED]
    added = [b"Authorization: Bearer " + token.encode("ascii"), b"Connection: close"]
    return b"\r\n".join([request_line, *kept, *added]) + b"\r\n\r\n"


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with suppress(Exception):
            writer.close()


async def _serve_one(
    client_reader: asyncio.StreamReader,
    client_writer: asyncio.StreamWriter,
    target: tuple[str, int],
    token: str,
) -> None:
    try:
        head = await client_reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        client_writer.close()
        return
    try:
        upstream_reader, upstream_writer = await asyncio.open_connection(*target)
        upstream_writer.write(with_token(head, token))
        await upstream_writer.drain()
        await asyncio.gather(_copy(client_reader, upstream_writer), _copy(upstream_reader, client_writer))
    except (OSError, asyncio.CancelledError):  # the console is gone, or the proxy stops: end the exchange
        client_writer.close()


@contextmanager
def bearer_proxy(target: tuple[str, int], token: str) -> Iterator[int]:
    """Run the proxy on an event loop in a thread of its own; yields its loopback port."""
    loop = asyncio.new_event_loop()
    listening: queue.Queue[asyncio.Server] = queue.Queue()

    async def start() -> None:
        server = await asyncio.start_server(
            lambda r, w: _serve_one(r, w, target, token), "127.0.0.1", 0, limit=HEAD_LIMIT
        )
        listening.put(server)

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    server = listening.get(timeout=10)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        asyncio.run_coroutine_threadsafe(_stop(server), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()


async def _stop(server: asyncio.Server) -> None:
    server.close()
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)
