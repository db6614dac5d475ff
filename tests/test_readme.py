"""The README's demo command, its agent connection and its test command, and the agent API's curl
walk-through (docs/agent-api.md), work exactly as printed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli_runner import run_console
from tests.harness import form_fields, html, one
from tests.processes import read_lines, running_demo

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
AGENT_API = (REPO / "docs" / "agent-api.md").read_text()
START_TIMEOUT = 60
BASH = shutil.which("bash") or "/bin/bash"
MAKE = shutil.which("make")


def commands(section: str) -> list[str]:
    """The shell commands in the README section with this heading."""
    body = README.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return [line for block in re.findall(r"```sh\n(.*?)```", body, flags=re.S) for line in block.splitlines()]


def walkthrough() -> str:
    """The numbered steps of docs/agent-api.md, up to the paragraphs after them."""
    steps = AGENT_API.split("The whole API is described", 1)[0]
    return "\n".join(re.findall(r"```sh\n(.*?)```", steps, flags=re.S))


def connect_snippet(url: str, token: str) -> Any:
    """README's `mcpServers` entry with the demo's address and dev's token filled in."""
    body = README.split("\n## Connect an agent\n", 1)[1].split("\n## ", 1)[0]
    [snippet] = re.findall(r"```json\n(.*?)```", body, flags=re.S)
    return json.loads(snippet.replace("http://127.0.0.1:8000", url).replace("<console-demo-token>", token))


def printed_mcp_servers(banner: list[str]) -> Any:
    """The `mcpServers` entry the demo's banner prints, indented under the line announcing it."""
    start = next(i for i, line in enumerate(banner) if line.endswith("mcpServers entry:")) + 1
    entry = [line for line in banner[start:] if line.startswith("    ")]
    return json.loads("\n".join(entry[: entry.index("    }") + 1]))


def document_ending(line: str) -> dict[str, Any]:
    """The JSON object a printed line ends with (the command before may have printed no newline)."""
    decoder = json.JSONDecoder()
    for start in (index for index, char in enumerate(line) if char == "{"):
        try:
            document, end = decoder.raw_decode(line, start)
        except json.JSONDecodeError:
            continue
        if end == len(line.rstrip()) and isinstance(document, dict):
            return document
    raise AssertionError(f"no JSON object ends this line: {line!r}")


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.extend(int(child) for child in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    """Whether the process still exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the walk-through uses curl")
def test_readme_agent_entry_and_the_api_walkthrough_work_against_the_demo(tmp_path: Path) -> None:
    env = {**os.environ, "CONSOLE_DISPATCH_POLL_SECONDS": "0.2"}
    env.pop("CONSOLE_DATABASE_URL", None)
    console = [sys.executable, "-m", "console.cli"]
    with running_demo(console, tmp_path, env, timeout=START_TIMEOUT, ctrl_c=False) as demo:
        assert any(line.startswith("  a deploy of auth-service waits for an answer") for line in demo.banner)
        assert (tmp_path / "console-demo-token").read_text().strip() == demo.token
        assert connect_snippet(demo.url.rstrip("/"), demo.token) == printed_mcp_servers(demo.banner)
        script = walkthrough().replace("TOKEN=mcpc_...", f"TOKEN={demo.token}")
        script = script.replace("http://127.0.0.1:8000", demo.url)
        output = run_walkthrough(script, tmp_path, demo.url, demo.passwords)
        children = child_pids(demo.process.pid)
        assert children, "the demo runs the tracker as a child process"
    assert [pid for pid in children if alive(pid)] == []  # stopping the demo stops its tracker too
    assert '"status":"awaiting_input"' in output
    assert "auth-service 2.4.1 is being deployed to production." in output
    assert '"kind":"gate"' in output
    assert output.rstrip().endswith("}")
    assert '"status":"completed"' in output.splitlines()[-1]
    assert "billing 2.4.1 is being deployed to production." in output.splitlines()[-1]
    # The decisions the walk-through made are in an intact, signed audit chain (docs/audit.md).
    verify_env = {**env, "CONSOLE_AUDIT_SIGNING_KEY_FILE": "console-demo-audit.key"}
    verified = run_console(["audit", "verify"], env=verify_env, cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def run_walkthrough(script: str, cwd: Path, url: str, passwords: dict[str, str]) -> str:
    """Run the walk-through's commands; when dev's own answer has been refused, two approvers decide on the
    web pages (as step 4 says) while the next command waits for the result, and again when the gated deploy
    waits at its gate (step 5). Returns everything printed."""
    with subprocess.Popen(
        [BASH, "-euo", "pipefail", "-c", script], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as walk:  # leaving the block closes its pipes, also when the walk-through fails
        assert walk.stdout is not None
        printed: list[str] = []
        try:
            for line in read_lines(walk.stdout, START_TIMEOUT):
                printed.append(line)
                if "no self-approval" in line:
                    break
            assert '"code":"forbidden"' in printed[-1], printed
            question = json.loads((cwd / "call.json").read_text())["pending"][0]["id"]
            decide_on_the_web(url, "lead", passwords["lead"], question, first=True)
            decide_on_the_web(url, "ops", passwords["ops"], question, first=False)
            for line in read_lines(walk.stdout, START_TIMEOUT):  # step 4 printed its whole line: none is cut
                printed.append(line)
                if '"kind":"gate"' in line:
                    break
            assert '"kind":"gate"' in printed[-1], printed
            # From the line tee printed, not from gated.json: tee may print before it writes the file.
            gate = document_ending(printed[-1])["pending"][0]["id"]
            approve_gate_on_the_web(url, "lead", passwords["lead"], gate)
            approve_gate_on_the_web(url, "ops", passwords["ops"], gate)
            rest, errors = walk.communicate(timeout=START_TIMEOUT)
        finally:
            walk.kill()
            walk.wait(timeout=10)
    assert walk.returncode == 0, errors.decode()
    return "\n".join(printed) + "\n" + rest.decode()


def decide_on_the_web(url: str, name: str, password: str, question: str, *, first: bool) -> None:
    """Sign in and accept the deploy question: the first approver chooses production, the second co-signs."""
    with httpx.Client(base_url=url.rstrip("/"), timeout=30) as browser:
        login = html(browser.get("/login"))
        fields = form_fields(one(login, 'form[action="/login"]'))
        assert browser.post("/login", data={**fields, "name": name, "password": password}).status_code == 303
        form = one(html(browser.get(f"/elicitations/{question}")), "form#decision-form")
        data = {**form_fields(form), "action": "accept"}
        if first:
            data[str(one(form, 'input[type="radio"][value="production"]')["name"])] = "production"
            data[str(one(form, 'input[type="checkbox"]')["name"])] = "true"
        else:
            assert "production" in one(form, "#fixed-content").get_text()
        decided = browser.post(f"/elicitations/{question}", data=data)
        assert decided.status_code == 303, decided.text


def approve_gate_on_the_web(url: str, name: str, password: str, question: str) -> None:
    """Sign in and approve the gated deploy as it stands (the second approver co-signs the same arguments)."""
    with httpx.Client(base_url=url.rstrip("/"), timeout=30) as browser:
        login = html(browser.get("/login"))
        fields = form_fields(one(login, 'form[action="/login"]'))
        assert browser.post("/login", data={**fields, "name": name, "password": password}).status_code == 303
        form = one(html(browser.get(f"/elicitations/{question}")), "form#decision-form")
        decided = browser.post(f"/elicitations/{question}", data={**form_fields(form), "action": "accept"})
        assert decided.status_code == 303, decided.text


def test_readme_demo_command_installs_and_starts_the_demo_in_one_line() -> None:
    assert commands("Run the demo") == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/console demo"
    ]


def test_readme_test_command_is_the_command_ci_runs() -> None:
    ci = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands("Run the tests") == ["make test"]
    assert ci[-1] == "make test"


@pytest.mark.skipif(MAKE is None, reason="runs make")
def test_make_test_creates_the_venv_and_installs_the_test_tools_when_missing(tmp_path: Path) -> None:
    shutil.copy(REPO / "Makefile", tmp_path)
    shutil.copy(REPO / "pyproject.toml", tmp_path)

    # As typed in a shell: not a sub-make of the `make test` that may be running this test, which would
    # print "Entering directory" lines and pass its own variables down.
    inherited = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "PYTHON"}
    shell_env = {name: value for name, value in os.environ.items() if name not in inherited}

    def planned() -> list[str]:
        done = subprocess.run(
            [str(MAKE), "-n", "test"],
            cwd=tmp_path,
            env=shell_env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.splitlines()

    fresh = planned()  # as in a fresh clone: no .venv
    first_check = next(i for i, line in enumerate(fresh) if " -m ruff check " in line)
    setup = fresh[:first_check]
    assert setup[0] == "python3 -m venv .venv"
    assert ".venv/bin/python -m pip install --quiet -e '.[dev]'" in setup
    checks = fresh[len(setup) :]
    assert checks[:5] == [
        ".venv/bin/python -m ruff check console tests migrations benchmarks docs/hooks",
        ".venv/bin/python -m ruff format --check console tests migrations benchmarks docs/hooks",
        '.venv/bin/python -c "$LINT_IMPORTS" --no-cache',  # import-linter: the layers of ARCHITECTURE.md
        ".venv/bin/python -m mypy",
        "NO_MKDOCS_2_WARNING=1 .venv/bin/python -m mkdocs build --strict --site-dir site",  # the docs site
    ]
    assert checks[5].startswith(".venv/bin/python -m pytest")

    stamp = tmp_path / ".venv" / ".installed"
    stamp.parent.mkdir()
    stamp.touch()
    os.utime(tmp_path / "pyproject.toml", (0, 0))
    assert planned() == checks  # set up already: straight to the checks
    os.utime(stamp, (0, 0))
    os.utime(tmp_path / "pyproject.toml")
    assert planned() == fresh  # pyproject.toml changed: install again
