"""Test MCP servers run in the console's own event loop over the SDK's in-memory streams: no process.

Such a server is registered as a stdio server whose program is `MEMORY` and whose one argument names the
test server (`memory_server("mrtr")`); its environment configures it as it configures the server's
process (MRTR_LOG, TASKS_LOG, ...). Every console the harness runs in this process (`running_console`)
reaches these servers with `in_memory`, through the pool's `Transports` seam (console/mcp/transports.py);
each connection gets a server of its own, as each stdio connection gets a process of its own. A console
process (`console serve`) cannot reach them: there the program does not exist and the server fails to
start, so tests of a console process keep real server processes.

What only a process shows stays with real processes: a server that exits or is killed, its process id,
the stdio and HTTP transports themselves (the tests marked `transport`), their limits on what is read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.client import Transport
from mcp.server import Server
from mcp.shared.memory import create_client_server_memory_streams

from console.mcp.endpoint import Endpoint
from tests.servers import bulky_server, everything_server, mrtr_server, tasks_server

MEMORY = "in-memory-test-server"  # the program of a server registered to run in the console's loop
# How long a server has to end by itself once its streams closed, before its task is cancelled.
SHUTDOWN_SECONDS = 2.0


def _mrtr(env: Mapping[str, str]) -> Server[Any]:
    state_key = env.get("MRTR_STATE_KEY", mrtr_server.DEFAULT_STATE_KEY)
    log = mrtr_server.RequestLog(env.get("MRTR_LOG"))
    return mrtr_server.build_server(log, state_key.encode(), env.get("MRTR_TOOL_TEXT"))


def _tasks(env: Mapping[str, str]) -> Server[Any]:
    return tasks_server.build_server(
        tasks_server.Log(env.get("TASKS_LOG")), int(env.get("TASKS_POLL_MS", "200"))
    )


# The test servers that run in memory, by name, each built from its environment.
SERVERS: dict[str, Callable[[Mapping[str, str]], Server[Any]]] = {
    "mrtr": _mrtr,
    "everything": lambda env: everything_server.build_server(everything_server.Shared()),
    "tasks": _tasks,
    "bulky": lambda env: bulky_server.build_server(),
}


def memory_command(name: str) -> list[str]:
    """The command line a test server running in memory is registered with."""
    if name not in SERVERS:
        raise ValueError(f"no test server {name!r} runs in memory; there are {sorted(SERVERS)}")
    return [MEMORY, name]


def in_memory(endpoint: Endpoint) -> Transport | None:
    """The console's `Transports` in tests: a new in-memory server for an endpoint registered with
    `memory_command`, None (its own transport) for every other."""
    if endpoint.transport != "stdio" or endpoint.command[:1] != (MEMORY,):
        return None
    _, name = endpoint.command
    return _serving(SERVERS[name](dict(endpoint.env)))


@asynccontextmanager
async def _serving(server: Server[Any]) -> AsyncIterator[Any]:
    """The client's streams to `server`, served in a task until the connection closes them."""
    async with create_client_server_memory_streams() as (client, (read, write)):
        done = anyio.Event()

        async def serve() -> None:
            try:
                await server.run(read, write, server.create_initialization_options())
            finally:
                done.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve)
            try:
                yield client
            finally:
                await client[1].aclose()  # the server reads the end of its input, as a process would
                with anyio.move_on_after(SHUTDOWN_SECONDS, shield=True):
                    await done.wait()
                tasks.cancel_scope.cancel()
