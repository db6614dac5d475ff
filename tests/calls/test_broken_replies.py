"""What an agent is told when an MCP server answers a call as a broken server does: the HTTP status it
answered with, or in one sentence what was wrong with its reply (never a validator's raw report)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.harness import REPO, ServerSpec, running_console
from tests.processes import ServerProcess, start_http_server

pytestmark = pytest.mark.anyio

FAILING = [sys.executable, str(REPO / "tests" / "servers" / "failing_server.py")]


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    stderr = tmp_path_factory.mktemp("failing") / "stderr.txt"
    with start_http_server(FAILING, {}, stderr) as server:
        yield server


@pytest.mark.parametrize("status", [500, 503, 404])
async def test_an_upstream_http_error_is_named_with_its_status(
    sqlite_url: str, failing: ServerProcess, status: int
) -> None:
    async with running_console(sqlite_url, {"failing": ServerSpec(url=failing.url)}) as console:
        call = await console.call("failing", "http_status", {"status": status})
    assert call["status"] == "failed", call
    assert call["error"]["message"] == f"the server answered tools/call with HTTP {status}"


@pytest.mark.parametrize(
    ("tool", "told"),
    [
        ("wrong_result", "the server's reply to tools/call is not a valid tools/call result (its 'content' "),
        ("not_json", "the server's reply to tools/call is not JSON-RPC: it could not be parsed"),
    ],
)
async def test_a_reply_that_cannot_be_read_is_told_in_one_sentence(
    sqlite_url: str, failing: ServerProcess, tool: str, told: str
) -> None:
    async with running_console(sqlite_url, {"failing": ServerSpec(url=failing.url)}) as console:
        call = await console.call("failing", tool, {})
    message = call["error"]["message"]
    assert call["status"] == "failed", call
    assert message.startswith(told)
    assert "\n" not in message
    assert "validation error" not in message
