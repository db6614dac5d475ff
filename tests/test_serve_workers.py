"""`console serve --workers N` serves one port from N processes, replaces one that dies, and takes them all
down with it: on SIGTERM in order, and even when it is killed itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import psutil
import pytest

from tests.harness import SECRET_KEY, TEAM, seed, stdio_mrtr
from tests.processes import read_lines

pytestmark = pytest.mark.postgres

BOUND = 60.0
CALLS = 8
METRICS_TOKEN = "metrics-token-for-the-test"  # noqa: S105  # a test value


@contextmanager
def serving(database_url: str, *args: str, **settings: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    env = {**os.environ, "CONSOLE_DATABASE_URL": database_url, "CONSOLE_SECRET_KEY": SECRET_KEY, **settings}
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = next(read_lines(process.stdout, BOUND), "")
        assert line.startswith("listening on "), line
        yield process, line.removeprefix("listening on ").split()[0]
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=BOUND)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def serving_processes(process: subprocess.Popen[bytes]) -> list[psutil.Process]:
    return [child for child in psutil.Process(process.pid).children() if "--socket-fd" in child.cmdline()]


def test_serve_with_workers_serves_from_that_many_processes_and_replaces_one_that_dies(
    postgres_url: str,
) -> None:
    with serving(postgres_url, "--workers", "3") as (process, url):
        first = serving_processes(process)
        assert len(first) == 3
        for _ in range(10):  # each on a new connection, to whichever process accepts it
            assert httpx.get(f"{url}/readyz", timeout=BOUND).json() == {"status": "ready"}
        first[0].send_signal(signal.SIGKILL)
        assert process.stderr is not None
        told = []
        for line in read_lines(process.stderr, BOUND):
            told.append(line)
            if line.endswith("serves"):
                break
        assert f"console process {first[0].pid} exited with code -9; starting another" in told[-2]
        replacement = int(told[-1].split()[-2])
        now = serving_processes(process)
        assert sorted(p.pid for p in now) == sorted([*(p.pid for p in first[1:]), replacement])
        assert httpx.get(f"{url}/readyz", timeout=BOUND).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=BOUND) == 0
        assert psutil.wait_procs(now, timeout=BOUND)[1] == []


def test_the_serving_processes_end_when_their_supervisor_is_killed(postgres_url: str) -> None:
    with serving(postgres_url, "--workers", "2") as (process, url):
        children = serving_processes(process)
        assert len(children) == 2
        process.send_signal(signal.SIGKILL)
        assert psutil.wait_procs(children, timeout=BOUND)[1] == []
        with pytest.raises(httpx.TransportError):
            httpx.get(f"{url}/readyz", timeout=BOUND)


def test_metrics_count_what_every_serving_process_did(postgres_url: str, tmp_path: Path) -> None:
    tokens = anyio.run(seed, postgres_url, {"mrtr": stdio_mrtr(tmp_path / "requests.jsonl")})
    agent = {"Authorization": f"Bearer {tokens['dev']}"}
    scraper = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    with serving(postgres_url, "--workers", "2", CONSOLE_METRICS_TOKEN=METRICS_TOKEN) as (_, url):
        for n in range(CALLS):  # each on a new connection, to whichever process accepts it
            run = httpx.post(f"{url}/api/v1/runs", json={"team": TEAM, "title": "m"}, headers=agent)
            call = httpx.post(
                f"{url}/api/v1/runs/{run.json()['id']}/calls",
                params={"wait": BOUND / 2},
                json={
                    "server": "mrtr",
                    "method": "tools/call",
                    "params": {"name": "complete_now", "arguments": {"x": str(n)}},
                },
                headers=agent,
                timeout=BOUND,
            )
            assert call.json()["status"] == "completed", call.text
        for _ in range(4):  # whichever process answers the scrape
            scraped = httpx.get(f"{url}/metrics", headers=scraper, timeout=BOUND).text
            assert f'console_call_duration_seconds_count{{status="completed"}} {float(CALLS)}' in scraped
