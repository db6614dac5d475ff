"""Processes under measurement: the MCP server, the console, a holding client; their memory and sockets."""

from __future__ import annotations

import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

START_TIMEOUT = 60.0
REPO = Path(__file__).resolve().parent.parent  # `python -m benchmarks.…` resolves from here
SECRET_KEY = "benchmark-secret-key-0123456789-abcdefghij"  # noqa: S105  # a throwaway key for benchmark databases


@dataclass
class Proc:
    url: str
    process: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def rss(self) -> int:
        """Resident memory in bytes."""
        return int(psutil.Process(self.pid).memory_info().rss)

    def connections_to(self, url: str) -> int:
        """Established TCP connections from this process to the host and port of `url`."""
        port = urlsplit(url).port
        connections = psutil.Process(self.pid).net_connections(kind="tcp")
        return len([c for c in connections if c.status == psutil.CONN_ESTABLISHED and c.raddr.port == port])


@contextmanager
def started(
    argv: list[str], log: Path, env: dict[str, str] | None = None, *, stdin: bool = False
) -> Iterator[Proc]:
    """Run `argv` until it prints `listening on URL` (bounded), yield it, then kill it."""
    with log.open("ab") as stderr:
        process = subprocess.Popen(  # noqa: S603  # our own modules, started with this interpreter
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={**os.environ, **(env or {})},
            cwd=REPO,
        )
        try:
            assert process.stdout is not None  # noqa: S101  # set by stdout=PIPE
            line = first_line(process.stdout.fileno(), START_TIMEOUT)
            if not line.startswith("listening on "):
                raise RuntimeError(f"{argv[:4]} did not start: {log.read_text()[-2000:]}")
            yield Proc(line.removeprefix("listening on ").strip(), process)
        finally:
            process.kill()
            process.wait(timeout=30)
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()


def first_line(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    buffer = b""
    while b"\n" not in buffer and (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        buffer += chunk
    return buffer.split(b"\n", 1)[0].decode()


@contextmanager
def mcp_server(work: Path) -> Iterator[Proc]:
    with started([sys.executable, "-m", "benchmarks.server"], work / "server.log") as proc:
        yield proc


@contextmanager
def floor(work: Path, upstream_url: str, token: str | None = None) -> Iterator[Proc]:
    """B6's floor gateway (benchmarks/floor.py) in front of `upstream_url`: with a `token`, it checks it
    and records each call durably; without one, it only forwards."""
    argv = [sys.executable, "-m", "benchmarks.floor", upstream_url]
    if token is not None:
        argv.append(str(work / f"floor-{secrets.token_hex(4)}.db"))
    env = {} if token is None else {"FLOOR_TOKEN": token}
    with started(argv, work / "floor.log", env) as proc:
        yield proc


@contextmanager
def floor_api(work: Path, upstream_url: str, database_url: str, token: str) -> Iterator[Proc]:
    """B1's floor (benchmarks/floor_api.py) in front of `upstream_url`, recording on `database_url`;
    its URL is the API's base, as the console's."""
    argv = [sys.executable, "-m", "benchmarks.floor_api", upstream_url, database_url]
    with started(argv, work / "floor-api.log", {"FLOOR_TOKEN": token}) as proc:
        yield proc


@contextmanager
def floor_records(work: Path, upstream_url: str, database_url: str) -> Iterator[Proc]:
    """B1's second floor (benchmarks/floor_records.py) in front of `upstream_url`, on the console database
    `database_url`; its URL is the API's base, as the console's."""
    argv = [sys.executable, "-m", "benchmarks.floor_records", upstream_url, database_url]
    with started(argv, work / "floor-records.log", {}) as proc:
        yield proc


@contextmanager
def console(database_url: str, work: Path, *, workers: int = 1, **env: str) -> Iterator[Proc]:
    """`console serve` on a free port from `workers` processes, each with its in-process dispatcher."""
    settings = {
        "CONSOLE_DATABASE_URL": database_url,
        "CONSOLE_ENV": "dev",
        "CONSOLE_SECRET_KEY": SECRET_KEY,
        **env,
    }
    argv = [sys.executable, "-m", "console.cli", "serve", "--port", "0", "--workers", str(workers)]
    with started(argv, work / "console.log", settings) as proc:
        yield proc
