"""Starting MCP server processes for tests and reading back what they recorded."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

START_TIMEOUT = 30.0


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]

    @property
    def log_path(self) -> Path | None:
        path = self.env.get("MRTR_LOG")
        return Path(path) if path else None


@contextmanager
def start_http_server(argv: list[str], env: dict[str, str], stderr_path: Path) -> Iterator[ServerProcess]:
    """Run `argv --http 0` and wait (bounded) for its `listening on URL` line."""
    full_env = {**os.environ, **env}
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen(
            [*argv, "--http", "0"], stdout=subprocess.PIPE, stderr=stderr, env=full_env
        )
        try:
            assert process.stdout is not None
            url = _read_listening_line(process.stdout, stderr_path)
            yield ServerProcess(url, process, env)
        finally:
            if process.stdout is not None:
                process.stdout.close()
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _read_listening_line(stdout: IO[bytes], stderr_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        line = stdout.readline().decode().strip()
        if line.startswith("listening on "):
            return line.removeprefix("listening on ")
        if not line:
            break
    raise RuntimeError(f"server did not start: {stderr_path.read_text()[-2000:]}")


def read_log(path: Path) -> list[dict[str, Any]]:
    """Every request an MRTR test server recorded, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
