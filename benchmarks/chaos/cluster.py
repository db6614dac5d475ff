"""The console processes under test: `console serve` (each with its dispatcher) and one `console worker`,
killed with SIGKILL and started again."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import anyio

from benchmarks.procs import REPO

START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


@dataclass
class Member:
    """One console process: `serve N` or `worker`, and where a serve listens."""

    role: str
    process: subprocess.Popen[bytes]
    address: tuple[str, int] | None
    connection_name: str  # its connections' application_name in pg_stat_activity

    @property
    def pid(self) -> int:
        return self.process.pid


@dataclass(frozen=True)
class Killed:
    role: str
    pid: int
    at: float  # wall clock (time.time()) just before the SIGKILL
    connection_name: str


class Cluster:
    """`serves` serve processes and one worker on one database; `env` is added to every one's environment."""

    def __init__(self, env: dict[str, str], work: Path, serves: int) -> None:
        self._env = {**os.environ, **env}
        self._work = work
        self._roles = [f"serve {n}" for n in range(1, serves + 1)] + ["worker"]
        self.members: list[Member] = []
        self._launches = 0

    async def start(self) -> None:
        """Start every process, side by side; return once each is ready."""
        started: dict[str, Member] = {}

        async def launch(role: str) -> None:
            started[role] = await anyio.to_thread.run_sync(self._launch, role)

        try:
            async with anyio.create_task_group() as tg:
                for role in self._roles:
                    tg.start_soon(launch, role)
        finally:
            self.members = [started[role] for role in self._roles if role in started]

    def addresses(self) -> list[tuple[str, int]]:
        return [m.address for m in self.members if m.address is not None]

    async def kill(self, member: Member) -> Killed:
        """SIGKILL `member` and wait until it is gone."""
        killed = Killed(member.role, member.pid, time.time(), member.connection_name)
        member.process.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(member.process.wait)
        return killed

    async def restart(self, member: Member) -> Member:
        """Start the role of a killed member again (a serve listens on a new port); the new member."""
        fresh = await anyio.to_thread.run_sync(self._launch, member.role)
        self.members[self.members.index(member)] = fresh
        return fresh

    async def stop(self) -> None:
        """Stop every process (SIGTERM, then SIGKILL after STOP_TIMEOUT)."""
        for member in self.members:
            member.process.terminate()
        for member in self.members:
            await anyio.to_thread.run_sync(_wait_or_kill, member.process)

    def _launch(self, role: str) -> Member:
        serve = role != "worker"
        self._launches += 1
        connection_name = f"chaos {role} #{self._launches}"
        command = ["serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"] if serve else ["worker"]
        log = (self._work / f"{role.replace(' ', '-')}.log").open("ab")
        process = subprocess.Popen(  # noqa: S603  # the console, started with this interpreter
            [sys.executable, "-m", "console.cli", *command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env={**self._env, "PGAPPNAME": connection_name},
            cwd=REPO,
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_drain, args=(process, log, lines), daemon=True).start()
        try:
            first = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            first = ""
        expected = "listening on " if serve else "worker "
        if not first.startswith(expected):
            process.kill()
            process.wait(timeout=STOP_TIMEOUT)
            raise RuntimeError(f"{role} did not start; see {log.name}")
        address = None
        if serve:
            url = urlsplit(first.removeprefix("listening on ").strip())
            address = (url.hostname or "127.0.0.1", url.port or 0)
        return Member(role, process, address, connection_name)


def _drain(process: subprocess.Popen[bytes], log: IO[bytes], lines: queue.Queue[str]) -> None:
    """Hand the process's stdout lines to `lines` and its log until it exits (so the pipe never fills)."""
    assert process.stdout is not None  # noqa: S101  # stdout=PIPE
    with process.stdout, log:
        for raw in process.stdout:
            lines.put(raw.decode(errors="replace"))
            log.write(raw)
            log.flush()


def _wait_or_kill(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT)
