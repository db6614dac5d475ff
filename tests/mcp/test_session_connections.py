"""An agent's gateway session has connections of its own (console/mcp/pool.py): never shared with another
session or agent, bounded per agent, and closed when the session ends or they idle."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from console.mcp import Complete, ConnectionPool, Endpoint, McpRequest
from console.mcp.endpoint import AgentSession
from tests.harness import Mrtr

pytestmark = pytest.mark.anyio

WAIT = 30
PID = McpRequest("tools/call", {"name": "pid", "arguments": {}})


def endpoints(mrtr: Mrtr) -> tuple[Endpoint, dict[str, Endpoint]]:
    """The shared endpoint, and one of each session: a1 and a2 of agent a, b1 of agent b."""
    command, env = mrtr.spec.command, mrtr.spec.env
    assert command is not None
    shared = Endpoint.stdio(command, env)
    sessions = {"a1": ("a", "a1"), "a2": ("a", "a2"), "b1": ("b", "b1")}
    return shared, {name: replace(shared, session=AgentSession(*who)) for name, who in sessions.items()}


async def server_pid(pool: ConnectionPool, endpoint: Endpoint) -> str:
    """The process id of the server that answers on the endpoint's connection."""
    reply = await pool.send(endpoint, PID)
    assert isinstance(reply, Complete), reply
    text: str = reply.result["content"][0]["text"]
    return text


async def test_each_session_has_a_server_of_its_own_and_an_agent_holds_a_bounded_number(
    mrtr_stdio: Mrtr,
) -> None:
    shared, on = endpoints(mrtr_stdio)
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_agent_connections=1) as pool:
            first = {name: await server_pid(pool, on[name]) for name in ("a1", "b1")}
            plain = await server_pid(pool, shared)
            assert len({plain, *first.values()}) == 3  # no session shares a connection
            assert await server_pid(pool, on["a1"]) == first["a1"]  # a session keeps its own

            # Agent a holds one at most: its second session's closes the first's (idle), not b's.
            second = await server_pid(pool, on["a2"])
            assert second not in (first["a1"], first["b1"], plain)
            assert await server_pid(pool, on["b1"]) == first["b1"]
            assert await server_pid(pool, on["a1"]) not in (first["a1"], second)

            pool.close_session("b1")  # b's session ended
            assert await server_pid(pool, on["b1"]) != first["b1"]
            assert await server_pid(pool, shared) == plain


async def test_a_session_connection_idle_too_long_is_closed(mrtr_stdio: Mrtr) -> None:
    _, on = endpoints(mrtr_stdio)
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, session_idle_seconds=0.2) as pool:
            first = await server_pid(pool, on["a1"])
            await anyio.sleep(1.0)  # time passing is what is tested: five times the idle bound
            assert await server_pid(pool, on["a1"]) != first
