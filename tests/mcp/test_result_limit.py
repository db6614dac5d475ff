"""What the console reads of a server's reply is bounded (CONSOLE_MAX_RESULT_BYTES): a larger result fails
its request with an error naming the limit, over stdio and over Streamable HTTP (an event stream or one
JSON body), for a tool, a prompt and a resource alike; anything up to the limit comes through whole.

The server is tests/servers/bulky_server.py as its own process.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from console.errors import McpLost, McpProtocolError, McpUnavailable, ResultTooLarge
from console.mcp import Complete, ConnectionPool, Endpoint, McpRequest
from tests.harness import BULKY
from tests.processes import ServerProcess, start_http_server

pytestmark = [pytest.mark.anyio, pytest.mark.transport]

WAIT = 20
LIMIT = 1024 * 1024
TOO_LARGE = re.escape("larger than CONSOLE_MAX_RESULT_BYTES (1048576 bytes)")


@pytest.fixture(scope="module")
def bulky_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """The bulky server over HTTP: replying with event streams, with JSON bodies, and gzipped JSON."""
    folder = tmp_path_factory.mktemp("bulky")
    with (
        start_http_server(BULKY, {}, folder / "sse.txt") as sse,
        start_http_server(BULKY, {}, folder / "json.txt", ("--http", "0", "--json")) as json_bodies,
        start_http_server(BULKY, {}, folder / "gzip.txt", ("--http", "0", "--json", "--gzip")) as gzipped,
    ):
        yield {"sse": sse, "json": json_bodies, "gzip": gzipped}


@pytest.fixture(params=["stdio", "sse", "json"])
def bulky(request: pytest.FixtureRequest, bulky_http: dict[str, ServerProcess]) -> Endpoint:
    if request.param == "stdio":
        return Endpoint.stdio(BULKY, {})
    return Endpoint.http(bulky_http[request.param].url)


def tool(name: str, **arguments: Any) -> McpRequest:
    return McpRequest("tools/call", {"name": name, "arguments": arguments})


async def text_of(pool: ConnectionPool, endpoint: Endpoint, request: McpRequest) -> str:
    reply = await pool.send(endpoint, request)
    assert isinstance(reply, Complete), reply
    result = reply.result
    if "messages" in result:
        return str(result["messages"][0]["content"]["text"])
    if "contents" in result:
        return str(result["contents"][0]["text"])
    return str(result["content"][0]["text"])


REQUESTS = {
    "tools/call": lambda size: tool("bulky", size=size),
    "prompts/get": lambda size: McpRequest(
        "prompts/get", {"name": "bulky", "arguments": {"size": str(size)}}
    ),
    "resources/read": lambda size: McpRequest("resources/read", {"uri": f"bulky://{size}"}),
}


@pytest.mark.parametrize("method", list(REQUESTS))
async def test_a_result_past_the_limit_fails_its_request_naming_the_limit_and_the_next_one_is_served(
    bulky: Endpoint, method: str
) -> None:
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_result_bytes=LIMIT) as pool:
            with pytest.raises(ResultTooLarge, match=TOO_LARGE):
                await pool.send(bulky, REQUESTS[method](3 * LIMIT))
            assert await text_of(pool, bulky, REQUESTS[method](10)) == "x" * 10


async def test_a_result_up_to_the_limit_comes_through_whole(bulky: Endpoint) -> None:
    """Larger than the SDK's own bound on one event (1 MiB), which would fail it as a lost connection."""
    size = 2 * LIMIT - 1024  # the text, with the JSON around it, just under the limit
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_result_bytes=2 * LIMIT) as pool:
            assert await text_of(pool, bulky, tool("bulky", size=size)) == "x" * size


async def test_a_stdio_server_that_sent_too_much_is_restarted_and_what_else_was_out_is_lost() -> None:
    """The rest of its line is still coming: the connection ends, and a request still out has an unknown
    outcome; the server is started afresh for the next request."""
    endpoint = Endpoint.stdio(BULKY, {})
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_result_bytes=LIMIT) as pool:
            before = await text_of(pool, endpoint, tool("pid"))
            outcomes: dict[str, BaseException] = {}

            async def send(name: str, request: McpRequest) -> None:
                try:
                    await pool.send(endpoint, request)
                except McpProtocolError as exc:
                    outcomes[name] = exc
                except McpLost as exc:
                    outcomes[name] = exc

            async with anyio.create_task_group() as both:
                both.start_soon(send, "slow", tool("slow", seconds=30))
                both.start_soon(send, "bulky", tool("bulky", size=60 * LIMIT))
            after = await text_of(pool, endpoint, tool("pid"))
    assert isinstance(outcomes["bulky"], ResultTooLarge), outcomes
    assert isinstance(outcomes["slow"], McpLost), outcomes
    assert after != before


async def test_an_http_connection_goes_on_after_a_result_too_large(
    bulky_http: dict[str, ServerProcess],
) -> None:
    endpoint = Endpoint.http(bulky_http["sse"].url)
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_result_bytes=LIMIT) as pool:
            with pytest.raises(ResultTooLarge):
                await pool.send(endpoint, tool("bulky", size=60 * LIMIT))
            assert pool.ended(endpoint).is_set() is False
            assert await text_of(pool, endpoint, tool("bulky", size=5)) == "xxxxx"


async def test_a_compressed_reply_is_refused_unread(bulky_http: dict[str, ServerProcess]) -> None:
    """A compressed body could outgrow any limit in one read: the console asks for plain ones and refuses
    the others."""
    endpoint = Endpoint.http(bulky_http["gzip"].url)
    with anyio.fail_after(WAIT):
        async with ConnectionPool(request_timeout=WAIT, max_result_bytes=LIMIT) as pool:
            with pytest.raises(McpUnavailable, match=r"compressed its reply \(gzip\)"):
                await pool.send(endpoint, tool("bulky", size=10))
