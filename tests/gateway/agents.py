"""What a gateway test's agent calls and hears while its call waits, and the driver of the scripted
agents (tests/servers/sdk1_agent.py, tests/gateway/ts/agent.mjs) that speak JSON lines."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx

from tests.harness import WAIT, Console

DEPLOY = {"service": "auth-service"}
TARGET = {"f0": "staging", "f1": "true"}  # the form's fields in schema order: environment, confirm

QUESTION_LINK = re.compile(r"/(?:elicitations|connect)/([0-9a-f]+)")  # a link's page is /connect/<id>


class Heard:
    """The progress notifications an agent heard while its call waited."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._asked = anyio.Event()

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")
        if QUESTION_LINK.search(message or ""):
            self._asked.set()

    async def question_id(self) -> str:
        """The question the call waits for, once a notification named it (bounded)."""
        with anyio.fail_after(WAIT):
            await self._asked.wait()
        return next(m.group(1) for text in self.messages if (m := QUESTION_LINK.search(text)))


class ScriptedAgent:
    """A scripted agent process: one JSON command in, its JSON lines out."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._buffer = b""
        self.ready = ""

    def line(self) -> dict[str, Any]:
        """The agent's next line (bounded)."""
        stdout: IO[bytes] | None = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([stdout], [], [], WAIT)
            assert ready, "the agent said nothing in time"
            chunk = os.read(stdout.fileno(), 65536)
            assert chunk, "the agent ended"
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(raw)
        return parsed

    def send(self, **command: Any) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command).encode() + b"\n")
        self.process.stdin.flush()

    def call(self, name: str, arguments: dict[str, Any]) -> None:
        self.send(op="call", name=name, arguments=arguments)

    def until_result(self) -> tuple[dict[str, Any], list[str]]:
        """The result of the call under way, and the progress messages heard before it."""
        heard: list[str] = []
        while "result" not in (line := self.line()):
            assert "progress" in line, line
            heard.append(str(line["progress"]))
        result: dict[str, Any] = line["result"]
        return result, heard

    def asked(self) -> dict[str, Any]:
        """The question the agent's client was asked (skipping the progress it heard before)."""
        while "asked" not in (line := self.line()):
            assert "progress" in line, line
        question: dict[str, Any] = line["asked"]
        return question

    def question_id(self) -> str:
        """The question the call under way waits for, from the first progress message that links it."""
        while True:
            line = self.line()
            assert "progress" in line, line
            found = QUESTION_LINK.search(str(line["progress"]))
            if found:
                return found.group(1)


@contextmanager
def scripted_agent(argv: list[str], log: Path) -> Iterator[ScriptedAgent]:
    """Start `argv` (the agent's program, its URL and token) and wait for its `ready` line."""
    with (
        log.open("wb") as stderr,
        subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr) as process,
    ):
        try:
            agent = ScriptedAgent(process)
            first = agent.line()
            assert "ready" in first, log.read_text()
            agent.ready = str(first["ready"])
            yield agent
        finally:
            process.kill()


# --- raw 2026-07-28 requests, for what no SDK client does ------------------------------------------

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "pytest", "version": "1"},
}


async def mcp(
    console: Console,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    who: str | None,
    path: str = "/mcp",
    capabilities: dict[str, Any] | None = None,
    extra_headers: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> httpx.Response:
    """One 2026-07-28 request, as an MCP client sends it over Streamable HTTP, declaring `capabilities`."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
        **(extra_headers or {}),
    }
    if who is not None:
        headers.update(console.auth(who))
    name = (params or {}).get("name", (params or {}).get("taskId"))
    if name is not None:
        headers["Mcp-Name"] = str(name)
    sent_meta = {**META, "io.modelcontextprotocol/clientCapabilities": capabilities or {}, **(meta or {})}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": sent_meta}}
    return await console.client.post(path, json=body, headers=headers)


def payload(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, JSON or one SSE event."""
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [
            line.removeprefix("data:").strip()
            for line in response.text.splitlines()
            if line.startswith("data:")
        ]
        message: dict[str, Any] = json.loads(data[-1])
        return message
    parsed: dict[str, Any] = response.json()
    return parsed
