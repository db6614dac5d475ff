"""B7's writer processes (benchmarks/audit_writer.py): started together, told to commit for a while at
the same moment, and what they committed, added up."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks import procs

REPLY_GRACE = 60.0  # seconds a writer may take past its measurement to answer
START_TIMEOUT = 300.0  # for all of them: sixteen processes importing the console on a small machine


@contextmanager
def writers(
    count: int, url: str, call_id: str, work: Path, key: str
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` writer processes, each connected and waiting for a command."""
    env = {
        **os.environ,
        "CONSOLE_DATABASE_URL": url,
        "CONSOLE_ENV": "dev",
        "CONSOLE_SECRET_KEY": procs.SECRET_KEY,
        "CONSOLE_AUDIT_SIGNING_KEY": key,
    }
    argv = [sys.executable, "-m", "benchmarks.audit_writer", call_id]
    processes: list[subprocess.Popen[bytes]] = []
    with (work / "audit_writer.log").open("ab") as log:
        try:
            for _ in range(count):
                processes.append(
                    subprocess.Popen(  # noqa: S603  # our own module, started with this interpreter
                        argv,
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        env=env,
                        cwd=procs.REPO,
                    )
                )
            deadline = time.monotonic() + START_TIMEOUT
            for process in processes:
                if _reply(process, max(0.0, deadline - time.monotonic())) != "ready":
                    raise RuntimeError(
                        f"an audit writer did not start: {(work / 'audit_writer.log').read_text()[-2000:]}"
                    )
            yield processes
        finally:
            for process in processes:
                _stop(process)


def _reply(process: subprocess.Popen[bytes], timeout: float) -> str:
    assert process.stdout is not None  # noqa: S101  # set by stdout=PIPE
    return procs.first_line(process.stdout.fileno(), timeout)


def _stop(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None  # noqa: S101  # set by stdin=PIPE
    process.stdin.close()  # end of input: the writer disposes of its engine and exits
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()


@dataclass(frozen=True)
class Leg:
    per_second: float  # commits of all writers together
    held_per_commit: float  # seconds the head row was held, per commit
    busy: float  # the share of the time the head row was held by one of them
    per_take: float  # events chained each time one of them took the head row


def measure(writers: list[subprocess.Popen[bytes]], mode: str, seconds: float) -> Leg:
    """What `writers` commit together, all committing for `seconds` at the same time."""
    for process in writers:
        assert process.stdin is not None  # noqa: S101  # set by stdin=PIPE
        process.stdin.write(f"{mode} {seconds}\n".encode())
        process.stdin.flush()
    replies = []
    for process in writers:
        line = _reply(process, seconds + REPLY_GRACE)
        if not line.startswith("{"):
            raise RuntimeError(f"an audit writer did not answer {mode!r}: {line!r}")
        replies.append(json.loads(line))
    commits = sum(reply["commits"] for reply in replies)
    held = sum(reply["held"] for reply in replies)
    takes = sum(reply["takes"] for reply in replies)
    return Leg(
        per_second=sum(reply["commits"] / reply["seconds"] for reply in replies),
        held_per_commit=held / commits if commits else 0.0,
        busy=held / statistics.mean(reply["seconds"] for reply in replies),
        per_take=commits / takes if takes else 0.0,
    )
