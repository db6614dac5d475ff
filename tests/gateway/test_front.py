"""The gateway's paths are served ahead of the web app's routing, and still answer as the router did: a
method it does not serve is a 405 naming the ones it does, and an oversized body is refused (as a JSON-RPC
error when it streams in without a declared length)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.gateway.agents import mcp, payload
from tests.harness import Console, Mrtr, running_console
from tests.processes import read_log

pytestmark = pytest.mark.anyio

CAP = 4096  # bytes of a gateway request's body (CONSOLE_MAX_PARAMS_BYTES)


@pytest.fixture
async def console(database_url: str, mrtr_memory: Mrtr) -> Any:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, max_params_bytes=CAP) as running:
        yield running


async def test_a_method_the_gateway_does_not_serve_is_a_405_naming_those_it_does(console: Console) -> None:
    for path in ("/mcp", "/mcp/mrtr"):
        refused = await console.client.put(path, headers=console.auth("dev"), content=b"{}")
        assert refused.status_code == 405, refused.text
        assert refused.headers["allow"] == "GET, POST, DELETE"


async def test_a_body_over_the_cap_is_refused_and_nothing_is_called(
    console: Console, mrtr_memory: Mrtr
) -> None:
    arguments = {"x": "y" * (2 * CAP)}
    declared = await mcp(
        console, "tools/call", {"name": "mrtr__complete_now", "arguments": arguments}, who="dev"
    )
    assert declared.status_code == 413, declared.text
    streamed = await console.client.post(  # no Content-Length: the cap stops it as the body arrives
        "/mcp", headers={**console.auth("dev"), "Content-Type": "application/json"}, content=_chunks(3 * CAP)
    )
    assert streamed.status_code == 413, streamed.text
    assert streamed.json()["error"]["message"] == f"request body is larger than {CAP} bytes"
    # Within the cap the same path serves the call.
    served = await mcp(
        console, "tools/call", {"name": "mrtr__complete_now", "arguments": {"x": "y"}}, who="dev"
    )
    assert payload(served)["result"]["content"][0]["text"] == "hello y"
    called = [r["arguments"] for r in read_log(mrtr_memory.log) if r.get("name") == "complete_now"]
    assert called == [{"x": "y"}]


async def _chunks(size: int) -> AsyncIterator[bytes]:
    for _ in range(size // 1024):
        yield b" " * 1024
