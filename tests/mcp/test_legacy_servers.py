"""Servers that speak only MCP 2025-11-25 (built with the official mcp 1.x SDK): plain calls work over stdio
and Streamable HTTP, a question the server pushes mid-call fails that call with a clear error, and the
agent API's server list says which protocol each server speaks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.harness import WAIT, Console, Mrtr, ServerSpec, result_text, running_console
from tests.mcp.sdk1 import SERVER, install
from tests.processes import ServerProcess, start_http_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(900)]  # the first one installs mcp 1.x (pip)


@pytest.fixture(scope="module")
def sdk1_python() -> Path:
    return install()


@pytest.fixture(scope="module")
def sdk1_http(sdk1_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    stderr = tmp_path_factory.mktemp("sdk1") / "stderr.txt"
    with start_http_server([str(sdk1_python), str(SERVER)], {}, stderr) as server:
        yield server


@pytest.fixture(params=["stdio", "http"])
def old_server(request: pytest.FixtureRequest, sdk1_python: Path) -> ServerSpec:
    """The 2025-11-25 test server, over stdio (a process per test) or Streamable HTTP (one per module)."""
    if request.param == "stdio":
        return ServerSpec(command=[str(sdk1_python), str(SERVER)])
    http: ServerProcess = request.getfixturevalue("sdk1_http")
    return ServerSpec(url=http.url)


async def protocols(console: Console) -> dict[str, str]:
    response = await console.client.get("/api/v1/servers", headers=console.auth("dev"))
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return {server["name"]: server["protocol"] for server in listed}


async def test_a_plain_call_to_a_2025_11_25_server_completes(
    database_url: str, old_server: ServerSpec, mrtr_stdio: Mrtr
) -> None:
    async with running_console(database_url, {"old": old_server, "mrtr": mrtr_stdio.spec}) as console:
        assert await protocols(console) == {"old": "unknown", "mrtr": "unknown"}  # never reached yet
        call = await console.call("old", "hello", {"name": "ada"})
        assert result_text(call) == "hello ada"
        assert await protocols(console) == {"old": "2025-11-25", "mrtr": "unknown"}
        assert result_text(await console.call("mrtr", "complete_now", {"x": "bo"})) == "hello bo"
        assert await protocols(console) == {"old": "2025-11-25", "mrtr": "2026-07-28"}


async def test_a_question_the_server_pushes_fails_that_call_and_no_other(
    database_url: str, old_server: ServerSpec
) -> None:
    async with running_console(database_url, {"old": old_server}) as console:
        with anyio.fail_after(WAIT):
            pushed = await console.call("old", "confirm", {"item": "release"})
        assert pushed["status"] == "failed", pushed
        assert pushed["result"] is None
        message = pushed["error"]["message"]
        assert "pushed a question in the middle of the call" in message, message
        assert "2025-11-25" in message, message
        assert await console.pending_questions("lead") == []  # nothing was parked for a person
        # The connection stays usable, and two calls at once each get their own answer.
        async with anyio.create_task_group() as tg:
            results: dict[str, dict[str, Any]] = {}

            async def call(tool: str, arguments: dict[str, str]) -> None:
                results[tool] = await console.call("old", tool, arguments)

            tg.start_soon(call, "confirm", {"item": "again"})
            tg.start_soon(call, "hello", {"name": "cy"})
        assert results["confirm"]["status"] == "failed", results
        assert result_text(results["hello"]) == "hello cy"
