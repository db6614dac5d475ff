"""The README's demo command and its curl walk-through work exactly as printed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.processes import read_lines

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
START_TIMEOUT = 60
BASH = shutil.which("bash") or "/bin/bash"


def walkthrough() -> str:
    section = README.split("## The agent API, step by step", 1)[1].split("The whole API is described", 1)[0]
    return "\n".join(re.findall(r"```sh\n(.*?)```", section, flags=re.S))


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
def test_readme_walkthrough_deploys_through_the_demo(tmp_path: Path) -> None:
    env = {**os.environ, "CONSOLE_DISPATCH_POLL_SECONDS": "0.2"}
    env.pop("CONSOLE_DATABASE_URL", None)
    demo = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "demo", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        assert demo.stdout is not None
        printed: list[str] = []
        for line in read_lines(demo.stdout, START_TIMEOUT):
            printed.append(line)
            if line.startswith("Press Ctrl+C"):
                break
        banner = "\n".join(printed)
        token = re.search(r"API token for dev's agent: (\S+)", banner)
        url = re.search(r"^listening on (\S+)$", banner, flags=re.M)
        assert token, banner
        assert url, banner
        assert "a deploy of auth-service waits for an answer" in banner
        script = walkthrough().replace("TOKEN=mcpc_...", f"TOKEN={token[1]}")
        script = script.replace("http://127.0.0.1:8000", url[1])
        done = subprocess.run(
            [BASH, "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
        )
        children = child_pids(demo.pid)
        assert children, "the demo runs the tracker as a child process"
    finally:
        if demo.stdout is not None:
            demo.stdout.close()
        demo.terminate()
        demo.wait(timeout=30)
    assert [pid for pid in children if alive(pid)] == []  # stopping the demo stops its tracker too
    assert done.returncode == 0, done.stderr
    assert '"status":"awaiting_input"' in done.stdout
    assert "auth-service 2.4.1 is being deployed to production." in done.stdout
    assert done.stdout.rstrip().endswith("}")
    assert '"status":"completed"' in done.stdout.splitlines()[-1]
