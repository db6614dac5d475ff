"""An MCP server that accepts TCP connections and never answers a byte: the agent API's `wait` bounds its
answer all the same, and each attempt to connect ends after CONSOLE_CONNECT_TIMEOUT_SECONDS, so the call
fails after CONSOLE_DISPATCH_ATTEMPTS of them, saying why."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest

from tests.harness import ServerSpec, running_console

pytestmark = pytest.mark.anyio

ANSWER_BOUND = 10.0  # far below the connect timeout the first test sets: the wait, not it, bounds the answer


@contextmanager
def _silent_server() -> Iterator[str]:
    """The URL of a socket that accepts connections (the kernel completes each handshake) and never reads
    or writes."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"


async def test_wait_bounds_the_answer_of_a_call_to_a_server_that_never_answers(database_url: str) -> None:
    with _silent_server() as url:
        async with running_console(
            database_url, {"silent": ServerSpec(url=url)}, connect_timeout_seconds=120
        ) as console:
            with anyio.fail_after(ANSWER_BOUND):
                started = await console.start(
                    "silent", "tools/call", {"name": "any", "arguments": {}}, wait=1
                )
    assert started.status_code == 202, started.text
    assert started.json()["status"] == "running"


async def test_a_call_to_a_server_that_never_answers_fails_after_its_connection_attempts(
    database_url: str,
) -> None:
    with _silent_server() as url:
        async with running_console(
            database_url,
            {"silent": ServerSpec(url=url)},
            connect_timeout_seconds=0.5,
            dispatch_attempts=2,
        ) as console:
            started = await console.start("silent", "tools/call", {"name": "any", "arguments": {}}, wait=0)
            failed = await console.settle(started.json()["id"])
            deferred = await console.audit_payloads("send_deferred")
    assert failed["status"] == "failed", failed
    assert "no answer within 0.5 s (CONSOLE_CONNECT_TIMEOUT_SECONDS)" in failed["error"]["message"]
    assert [payload["attempt"] for payload in deferred] == [1]
