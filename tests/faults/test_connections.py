"""Console processes go on when PostgreSQL has no connection left for them: another process holds every
free one (and ends the console's own), or two consoles with more agents between them than the server
allows connections. Once connections free up, without a restart, new calls complete, each answer resumes
its call exactly once, no call stays running or resuming, and a call is interrupted only when its
request reached the server (one that was claimed and never sent is sent later, never called "stopped
after sending").

The suite holds the connections for 1 s and runs 4 agents on 12 connections; `make faults` also holds
them for 20 s and runs 12 agents on 20 (CONSOLE_FAULTS_LONG=1).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from tests.faults.load import Load, check_each_call
from tests.harness import seed, stdio_mrtr
from tests.pgcluster import Cluster, private_cluster
from tests.processes import console_process, read_lines, stop_process

pytestmark = [pytest.mark.anyio, pytest.mark.faults, pytest.mark.slow]

LONG = pytest.mark.skipif(not os.environ.get("CONSOLE_FAULTS_LONG"), reason="long: `make faults` runs it")
HOG = str(Path(__file__).with_name("connection_hog.py"))
AGENTS = 3
BACK_WITHIN = 30.0  # after connections free up: the console works again, and every call under way ends
BEFORE = 120.0  # for the console's first calls on a busy machine
HOG_WAIT = 30.0  # for the hog to take every connection, or to end the others


@contextmanager
def _hogging(cluster: Cluster) -> Iterator[subprocess.Popen[bytes]]:
    """A process holding every connection the cluster gives, once it said so."""
    hog = subprocess.Popen(
        [sys.executable, HOG, cluster.conninfo()], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        _until_said(hog, "holding ")
        yield hog
    finally:
        stop_process(hog)
        for pipe in (hog.stdin, hog.stdout):
            if pipe is not None:
                pipe.close()


def _until_said(hog: subprocess.Popen[bytes], prefix: str) -> None:
    assert hog.stdout is not None
    said = next((line for line in read_lines(hog.stdout, HOG_WAIT) if line.startswith(prefix)), None)
    assert said is not None, f"the connection hog did not say {prefix!r} within {HOG_WAIT:.0f} s"


def _evict(hog: subprocess.Popen[bytes]) -> None:
    """The hog ends every other backend (the console's) and takes their places."""
    assert hog.stdin is not None
    hog.stdin.write(b"evict\n")
    hog.stdin.flush()
    _until_said(hog, "evicted ")


@pytest.mark.timeout(400)
@pytest.mark.parametrize("held_for", [1.0, pytest.param(20.0, marks=LONG)])
async def test_a_console_goes_on_after_another_process_held_every_connection(
    held_for: float, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    with private_cluster(max_connections=20) as cluster:
        tokens = await seed(cluster.url(), {"mrtr": stdio_mrtr(log)})
        with console_process(cluster.url(), tmp_path / "console.txt") as base:
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                load = Load(http, tokens)
                async with anyio.create_task_group() as approving:
                    approving.start_soon(load.approver)
                    stop = anyio.Event()
                    async with anyio.create_task_group() as agents:
                        for number in range(AGENTS):
                            agents.start_soon(load.agent, f"agent{number}", stop)
                        with anyio.fail_after(BEFORE):
                            await load.completions(AGENTS)
                        with _hogging(cluster) as hog:
                            await anyio.to_thread.run_sync(_evict, hog)
                            await anyio.sleep(held_for)  # the fault itself: how long nothing is free
                        freed = anyio.current_time()
                        with anyio.fail_after(BACK_WITHIN):
                            while len(_completed(load, freed)) < AGENTS:
                                await load.completed.wait()
                            stop.set()
                            await load.agents_stopped.wait()
                    approving.cancel_scope.cancel()
    check_each_call(load, log)


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    ("agents", "max_connections"), [(4, 12), pytest.param(12, 20, marks=LONG)], ids=["4-on-12", "12-on-20"]
)
async def test_two_consoles_with_fewer_connections_than_they_want_go_on(
    agents: int, max_connections: int, tmp_path: Path
) -> None:
    # Each process keeps up to CONSOLE_DATABASE_POOL_SIZE (10) connections and two for wake-ups: 24 wanted.
    log = tmp_path / "requests.jsonl"
    with private_cluster(max_connections=max_connections) as cluster:
        tokens = await seed(cluster.url(), {"mrtr": stdio_mrtr(log)})
        with (
            console_process(cluster.url(), tmp_path / "console.txt") as first,
            console_process(cluster.url(), tmp_path / "console.txt") as second,
        ):
            async with AsyncExitStack() as clients:
                loads = [
                    Load(
                        await clients.enter_async_context(httpx.AsyncClient(base_url=base, timeout=30)),
                        tokens,
                    )
                    for base in (first, second)
                ]
                with anyio.fail_after(BEFORE + BACK_WITHIN):
                    async with anyio.create_task_group() as approving:
                        for load in loads:
                            approving.start_soon(load.approver)
                        stop = anyio.Event()
                        async with anyio.create_task_group() as calling:
                            for number in range(agents):
                                calling.start_soon(loads[number % 2].agent, f"agent{number}", stop)
                            for (
                                load
                            ) in loads:  # each process completes as many calls as there are agents in all
                                await load.completions(agents)
                            stop.set()
                        approving.cancel_scope.cancel()
    for load in loads:
        check_each_call(load, log)


def _completed(load: Load, since: float) -> list[str]:
    return [call["id"] for call in load.ended_after(since) if call["status"] == "completed"]
