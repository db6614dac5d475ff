"""The stdio transport: an MCP server as a child process, one JSON-RPC message a line, each line read
within a limit.

The SDK's own transport keeps a line whole in memory however long it grows; this one stops at the limit.
A line past it is a reply too large: the request it answers (named at the head of the line, or the only
one out) gets the error `oversize.too_large` makes in its place, and the connection ends, because the
rest of the line is still coming and nothing after it can be trusted to start a message. The session
sees the end, and the pool starts the server afresh for the next request; what the line's server still
writes is read and dropped while it is stopped (stdin closed, then SIGTERM and SIGKILL to its process
group).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress

import anyio
import mcp.types as types
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from console.mcp.oversize import HEAD_BYTES, response_id, too_large

logger = logging.getLogger(__name__)

EXIT_GRACE_SECONDS = 2.0  # for the server to exit once its stdin is closed, then for SIGTERM to end it
FLUSH_SECONDS = 0.5  # for messages already handed to the transport to reach the server when it closes

Received = SessionMessage | Exception


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    limit: int,
    exited: Callable[[int], None] | None = None,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Received], MemoryObjectSendStream[SessionMessage]]]:
    """Start `command` with `args` (in a session of its own, with the SDK's safe environment and `env`)
    and give the streams of its messages. A server that ended its output and exited by itself before
    the streams closed is told to `exited`, with its exit status.

    Raises:
        OSError: the command cannot be started.
    """
    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | dict(env),
        stderr=sys.stderr,
        start_new_session=True,
    )
    to_session, from_server = anyio.create_memory_object_stream[Received](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    out: dict[str, types.RequestId] = {}  # the requests the server has not answered yet, by their id as text
    written, output_ended = anyio.Event(), anyio.Event()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process, to_session, limit, out, output_ended)
        tasks.start_soon(_write, process, from_session, to_session, out, written)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):  # every wait below is bounded
                from_server.close()  # a delivery still waiting for the session gives up: the rest is dropped
                to_server.close()
                with anyio.move_on_after(FLUSH_SECONDS):
                    await written.wait()
                if output_ended.is_set() and exited is not None:
                    with anyio.move_on_after(EXIT_GRACE_SECONDS):
                        exited(await process.wait())
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _read(
    process: Process,
    to_session: MemoryObjectSendStream[Received],
    limit: int,
    out: dict[str, types.RequestId],
    output_ended: anyio.Event,
) -> None:
    stdout = process.stdout
    if stdout is None:  # pragma: no cover  # opened with a pipe
        raise RuntimeError("the server's stdout is not a pipe")
    try:
        async with to_session:
            if await _deliver(stdout, to_session, limit, out):
                output_ended.set()
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass  # the session went away, or our writer closed the stream after a failed write
    await _drop_rest(stdout)


async def _deliver(
    stdout: ByteReceiveStream,
    to_session: MemoryObjectSendStream[Received],
    limit: int,
    out: dict[str, types.RequestId],
) -> bool:
    """Hand each line to the session until the server's output ends (True) or a line passes `limit`."""
    line = bytearray()
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            try:
                chunk = await stdout.receive()
            except anyio.EndOfStream:
                return True
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                line += chunk[start:end]
                start = end + 1
                if len(line) > limit:
                    break
                if line.strip():
                    await to_session.send(_parsed(bytes(line), out))
                line.clear()
            else:
                line += chunk[start:]
            if len(line) > limit:
                await _refuse_line(to_session, bytes(line[:HEAD_BYTES]), limit, out)
                return False
    return False


async def _refuse_line(
    to_session: MemoryObjectSendStream[Received], head: bytes, limit: int, out: dict[str, types.RequestId]
) -> None:
    named = response_id(head)
    answered = out.get(str(named)) if named is not None else None
    if answered is None and len(out) == 1:
        [answered] = out.values()
    logger.warning("an MCP server sent a line longer than %d bytes; it will be restarted", limit)
    if answered is None:
        return  # nothing out to blame: every request still out is lost with the connection
    await to_session.send(SessionMessage(too_large(answered, limit)))


def _parsed(line: bytes, out: dict[str, types.RequestId]) -> Received:
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # the session logs it; the connection goes on
        return exc
    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError) and message.id is not None:
        out.pop(str(message.id), None)
    return SessionMessage(message)


async def _drop_rest(stdout: ByteReceiveStream) -> None:
    """Read and drop what the server still writes, so one blocked on a full pipe can see its stdin close
    and exit."""
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            await stdout.receive()


async def _write(
    process: Process,
    from_session: MemoryObjectReceiveStream[SessionMessage],
    to_session: MemoryObjectSendStream[Received],
    out: dict[str, types.RequestId],
    written: anyio.Event,
) -> None:
    stdin = process.stdin
    if stdin is None:  # pragma: no cover  # opened with a pipe
        raise RuntimeError("the server's stdin is not a pipe")
    try:
        async with from_session:
            async for sent in from_session:
                message = sent.message
                if isinstance(message, types.JSONRPCRequest):
                    out[str(message.id)] = message.id
                elif isinstance(message, types.JSONRPCNotification) and message.method == (
                    "notifications/cancelled"
                ):
                    out.pop(str((message.params or {}).get("requestId")), None)
                line = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await stdin.send(line.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: the session must see the end rather than wait for answers.
        await to_session.aclose()
    finally:
        written.set()


async def _stop(process: Process) -> None:
    """Close the server's stdin and let it exit; SIGTERM, then SIGKILL, its process group if it does not."""
    if process.stdin is not None:
        with suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(EXIT_GRACE_SECONDS):
        await process.wait()
    if process.returncode is None:
        await terminate_posix_process_tree(process, EXIT_GRACE_SECONDS)
    with anyio.move_on_after(EXIT_GRACE_SECONDS):
        await process.aclose()
