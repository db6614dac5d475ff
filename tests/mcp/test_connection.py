"""One warm connection serves every call: a request that cannot be written must not end it for the others."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from console.errors import McpProtocolError
from console.mcp import Complete, ConnectionPool, Endpoint, McpRequest
from tests.harness import Mrtr
from tests.processes import read_log

pytestmark = [pytest.mark.anyio, pytest.mark.transport]

WAIT = 20


def _tool(name: str, arguments: dict[str, Any]) -> McpRequest:
    return McpRequest("tools/call", {"name": name, "arguments": arguments})


async def _text(pool: ConnectionPool, endpoint: Endpoint, request: McpRequest) -> str:
    reply = await pool.send(endpoint, request)
    assert isinstance(reply, Complete), reply
    text: str = reply.result["content"][0]["text"]
    return text


@pytest.mark.parametrize(
    "arguments",
    [{"x": "\ud800"}, {"\udfff": "x"}, {"x": ["fine", {"deeper": "\udc00"}]}],
    ids=["value", "member name", "nested value"],
)
async def test_a_request_with_a_lone_surrogate_fails_alone_and_the_connection_stays_up(
    mrtr_stdio: Mrtr, arguments: dict[str, Any]
) -> None:
    command, env = mrtr_stdio.spec.command, mrtr_stdio.spec.env
    assert command is not None
    endpoint = Endpoint.stdio(command, env)
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT) as pool:
            before = await _text(pool, endpoint, _tool("pid", {}))
            with pytest.raises(McpProtocolError, match="cannot be sent as JSON"):
                await pool.send(endpoint, _tool("complete_now", arguments))
            assert await _text(pool, endpoint, _tool("complete_now", {"x": "next"})) == "hello next"
            assert await _text(pool, endpoint, _tool("pid", {})) == before  # the same server process
    assert [r["name"] for r in read_log(mrtr_stdio.log)] == ["pid", "complete_now", "pid"]
