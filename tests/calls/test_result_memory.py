"""A hostile server's 60 MiB result, through a real `console serve` process: the console's memory and its
database stay small, over stdio and over HTTP (an event stream and one JSON body), and the audit log it
leaves still verifies with `console audit verify`."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.cli_runner import run_console
from tests.harness import BULKY, TEAM, ServerSpec
from tests.processes import start_http_server
from tests.site import Site, running_site

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
HUGE = 60 * MIB
RSS_GROWTH = 100 * MIB
WAIT = 60


@contextmanager
def peak_rss(process: psutil.Process) -> Iterator[list[int]]:
    """The most memory `process` held while the block ran (sampled every 5 ms), as `[bytes]`."""
    peak = [process.memory_info().rss]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join(timeout=10)
        peak[0] = max(peak[0], process.memory_info().rss)


def serving() -> psutil.Process:
    [process] = [p for p in psutil.Process().children() if "serve" in p.cmdline()]
    return process


def database_bytes(sqlite_url: str) -> int:
    path = Path(sqlite_url.removeprefix("sqlite+aiosqlite:///"))
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))


async def call(site: Site, server: str, size: int) -> dict[str, Any]:
    run = await site.api.post("/api/v1/runs", json={"team": TEAM, "title": server}, headers=site.auth("dev"))
    assert run.status_code == 201, run.text
    body = {
        "server": server,
        "method": "tools/call",
        "params": {"name": "bulky", "arguments": {"size": size}},
    }
    with anyio.fail_after(WAIT):
        started = await site.api.post(
            f"/api/v1/runs/{run.json()['id']}/calls", params={"wait": 30}, json=body, headers=site.auth("dev")
        )
    assert started.status_code in (200, 202), started.text
    ended: dict[str, Any] = started.json()
    return ended


async def test_a_60_mib_result_leaves_the_console_process_and_its_database_small(
    sqlite_url: str, tmp_path: Path
) -> None:
    with (
        start_http_server(BULKY, {}, tmp_path / "sse.txt") as sse,
        start_http_server(BULKY, {}, tmp_path / "json.txt", ("--http", "0", "--json")) as json_bodies,
    ):
        servers = {
            "stdio": ServerSpec(command=BULKY),
            "sse": ServerSpec(url=sse.url),
            "json": ServerSpec(url=json_bodies.url),
        }
        async with running_site(sqlite_url, servers, tmp_path) as site:
            for server in servers:  # each connection warm
                assert (await call(site, server, 1000))["status"] == "completed"
            console = serving()
            before_rss, before_db = console.memory_info().rss, database_bytes(sqlite_url)
            grown: dict[str, float] = {}
            for server in servers:
                with peak_rss(console) as peak:
                    failed = await call(site, server, HUGE)
                grown[server] = (peak[0] - before_rss) / MIB
                assert failed["status"] == "failed", str(failed)[:2000]
                assert "CONSOLE_MAX_RESULT_BYTES (8388608 bytes)" in failed["error"]["message"]
            assert (await call(site, "stdio", 10))["status"] == "completed"  # started afresh
            after_db = database_bytes(sqlite_url)
    assert all(growth < RSS_GROWTH / MIB for growth in grown.values()), grown
    assert after_db - before_db < MIB, after_db - before_db
    verified = run_console(
        ["audit", "verify"], env={"CONSOLE_DATABASE_URL": sqlite_url, "PATH": "/usr/bin:/bin"}
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
