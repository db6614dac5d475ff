"""The gateway with an MCP 2025-11-25 agent (the official `mcp` 1.x SDK: initialize, one session) in front
of the demo deployer and the MRTR test server: what it lists, a plain call, a question answered by a
person, a decline, and the hold bound passing followed by `console__await`."""

from __future__ import annotations

import json
import os
import select
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import pytest

from tests.gateway.agents import DEPLOY, QUESTION_LINK, TARGET
from tests.harness import WAIT
from tests.mcp.sdk1 import REPO, install
from tests.site import Site, decide_in_browser

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]  # the first use installs mcp 1.x
AGENT = REPO / "tests/servers/sdk1_agent.py"


class LegacyAgent:
    """The scripted mcp 1.x agent process: one command in, its JSON lines out."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._buffer = b""

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
            assert "error" not in line, line
            heard.append(str(line.get("progress")))
        return line["result"], heard

    def question_id(self) -> str:
        """The question the call under way waits for, from the first progress message that links it."""
        while True:
            line = self.line()
            assert "progress" in line, line
            found = QUESTION_LINK.search(str(line["progress"]))
            if found:
                return found.group(1)


@pytest.fixture(scope="module")
def sdk1_python() -> Path:
    return install()


@contextmanager
def legacy_agent(sdk1_python: Path, site: Site, tmp_path: Path, path: str = "/mcp") -> Iterator[LegacyAgent]:
    log = tmp_path / "agent.txt"
    with (
        log.open("wb") as stderr,
        subprocess.Popen(
            [str(sdk1_python), str(AGENT), site.base + path, site.tokens["dev"]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
        ) as process,
    ):
        try:
            agent = LegacyAgent(process)
            assert agent.line() == {"ready": "2025-11-25"}, log.read_text()
            yield agent
        finally:
            process.kill()


def text_of(result: dict[str, Any]) -> str:
    return "".join(part["text"] for part in result["content"] if part["type"] == "text")


async def test_a_2025_11_25_agent_lists_every_server_prefixed_and_a_plain_call_completes(
    site: Site, sdk1_python: Path, tmp_path: Path
) -> None:
    with legacy_agent(sdk1_python, site, tmp_path) as agent:
        agent.send(op="list_tools")
        names = set(agent.line()["tools"])
        assert {"deployer__deploy", "mrtr__complete_now", "console__await"} <= names
        agent.call("mrtr__complete_now", {"x": "there"})
        result, _ = agent.until_result()
    assert text_of(result) == "hello there"


async def test_a_2025_11_25_agents_call_waits_for_an_approver_who_answers_in_the_browser(
    site: Site, sdk1_python: Path, tmp_path: Path
) -> None:
    with legacy_agent(sdk1_python, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        question = agent.question_id()
        await decide_in_browser(site, question, "lead", "accept", TARGET)
        result, _ = agent.until_result()
    assert text_of(result) == "auth-service 2.4.1 is being deployed to staging."
    assert not result.get("isError")


async def test_a_decline_reaches_a_2025_11_25_agent_as_the_servers_answer(
    site: Site, sdk1_python: Path, tmp_path: Path
) -> None:
    with legacy_agent(sdk1_python, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        await decide_in_browser(site, agent.question_id(), "lead", "decline")
        result, _ = agent.until_result()
    assert text_of(result) == "Deployment not started (decline)."


async def test_past_the_hold_a_2025_11_25_agent_learns_it_still_waits_and_console_await_gets_the_result(
    impatient_site: Site, sdk1_python: Path, tmp_path: Path
) -> None:
    site = impatient_site
    with legacy_agent(sdk1_python, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        waiting, _ = agent.until_result()
        assert waiting["isError"]
        told = waiting["_meta"]["io.approval-console/waiting"]
        call_id, question = told["call_id"], told["questions"][0]["id"]
        assert f'console__await with {{"call_id": "{call_id}"}}' in text_of(waiting)
        production = {"environment": "production", "confirm": True}
        answered = await site.answer(question, "accept", production, who="lead")
        assert answered.status_code == 200, answered.text
        for _ in range(int(WAIT)):  # each wait lasts the 1 s hold at most
            agent.call("console__await", {"call_id": call_id})
            done, _ = agent.until_result()
            if not done.get("isError"):
                break
    assert text_of(done) == "auth-service 2.4.1 is being deployed to production."
