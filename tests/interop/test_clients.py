"""MCP clients nobody here wrote, as agents of dev through the gateway's `/mcp` with dev's bearer token: the
Python SDK 2.3 (this repository's) and 1.30, the TypeScript SDK 1.32, `fastmcp` 2 and 4 with an
`mcpServers` configuration, and the MCP Inspector's command line. Each lists the tools, makes a call that
completes at once, and makes a call that waits at a gate until an approver (never dev) approves it
through the API. Most of them run the gateway examples of docs/examples/ as they are.

SQLite only (tests/interop/console.py says why); one console for the module."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx
import pytest

from tests.harness import WAIT, stdio_mrtr
from tests.interop.console import Running, answer, first_pending, gate, module_console
from tests.interop.foreign import node_tools, python_env

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]  # may install the packages

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "docs" / "examples"
PLAIN = "mrtr__complete_now"
GATED = {"x": "gated"}  # the gate holds complete_now for these arguments only
RUN_TIMEOUT = WAIT * 6  # a client program's start, its listing and its call, on a busy machine


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass(frozen=True)
class Agent:
    """One client program: its command line and environment; it reads CONSOLE_MCP_URL, CONSOLE_TOKEN,
    TOOL and ARGUMENTS (the Inspector's script: TOOL_ARG, one key=value)."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


def typescript_example(folder: Path) -> Agent:
    """The TypeScript example beside the pinned node_modules, so Node resolves the SDK from it."""
    node = node_tools()
    folder.mkdir(exist_ok=True)
    shutil.copyfile(EXAMPLES / "gateway_typescript.mjs", folder / "gateway_typescript.mjs")
    if not (folder / "node_modules").exists():
        (folder / "node_modules").symlink_to(node.modules, target_is_directory=True)
    return Agent("typescript-sdk", [str(node.node), str(folder / "gateway_typescript.mjs")])


def inspector_example() -> Agent:
    node = node_tools()
    path = f"{node.modules / '.bin'}{os.pathsep}{node.node_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    return Agent("inspector-cli", ["sh", str(EXAMPLES / "gateway_inspector.sh")], {"PATH": path})


def agent_of(kind: str, folder: Path) -> Agent:
    if kind == "python-sdk-2":
        return Agent(kind, [sys.executable, str(EXAMPLES / "gateway_python.py")])
    if kind == "python-sdk-1.30":
        client = REPO / "tests/interop/clients/mcp1_client.py"
        return Agent(kind, [str(python_env("mcp-1.30") / "python"), str(client)])
    if kind in ("fastmcp-2", "fastmcp-4"):
        return Agent(kind, [str(python_env(kind) / "python"), str(EXAMPLES / "gateway_fastmcp.py")])
    if kind == "typescript-sdk":
        return typescript_example(folder)
    assert kind == "inspector-cli"
    return inspector_example()


# The clients whose program prints each progress notification it hears ("waiting: ...").
PROGRESS_SHOWN = {"python-sdk-2", "python-sdk-1.30", "typescript-sdk"}
CLIENTS = ["python-sdk-2", "python-sdk-1.30", "typescript-sdk", "fastmcp-2", "fastmcp-4", "inspector-cli"]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("interop-clients")
    servers = {"mrtr": stdio_mrtr(folder / "mrtr.jsonl")}
    with module_console(
        folder, sqlite_template, servers, CONSOLE_GATEWAY_HOLD_SECONDS=str(RUN_TIMEOUT)
    ) as console:
        gate(console, "mrtr", "complete_now", 'x == "gated"')
        yield console


@pytest.fixture
async def api(running: Running) -> AsyncIterator[httpx.AsyncClient]:
    async with running.api() as client:
        yield client


@pytest.fixture(params=CLIENTS)
def agent(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Agent:
    return agent_of(request.param, tmp_path_factory.getbasetemp() / "typescript-example")


def start(agent: Agent, running: Running, tool: str, arguments: dict[str, str]) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        **agent.env,
        "CONSOLE_MCP_URL": running.base + "/mcp",
        "CONSOLE_TOKEN": running.tokens["dev"],
        "TOOL": tool,
        "ARGUMENTS": json.dumps(arguments),
        "TOOL_ARG": ",".join(f"{k}={v}" for k, v in arguments.items()),
    }
    return subprocess.Popen(agent.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def finished(agent: Agent, process: subprocess.Popen[str]) -> str:
    """What the client printed, once it exited successfully (bounded)."""
    try:
        out, err = await anyio.to_thread.run_sync(lambda: process.communicate(timeout=RUN_TIMEOUT))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 0, f"exit {process.returncode}: {out[-2000:]} {err[-3000:]}"
    return out


async def test_a_client_lists_the_tools_and_a_plain_call_completes(agent: Agent, running: Running) -> None:
    out = await finished(agent, start(agent, running, PLAIN, {"x": "there"}))
    assert PLAIN in out
    assert "console__await" in out
    if agent.name == "python-sdk-1.30":
        assert "protocol: 2025-11-25" in out
    assert "hello there" in out
    assert '"isError": true' not in out
    assert "error:" not in out


async def test_a_clients_call_waits_at_a_gate_until_an_approver_approves_it(
    agent: Agent, running: Running, api: httpx.AsyncClient
) -> None:
    process = start(agent, running, PLAIN, GATED)
    try:
        question = await first_pending(api, running, within=RUN_TIMEOUT)  # the client starts first
        assert question["mode"] == "gate"
        await answer(api, running, question["id"], "accept")
    finally:
        out = await finished(agent, process)
    assert "hello gated" in out
    assert '"isError": true' not in out
    assert "error:" not in out
    if agent.name in PROGRESS_SHOWN:  # heard while it waited: whom the call waits for, and where
        heard = 'waiting: Waiting for a person to decide: "Complete now gated?"'
        assert heard in out
        assert f"/elicitations/{question['id']}" in out
