"""A `console serve` process goes on through a PostgreSQL restart and outage under load, without being
restarted: within 30 s of the database being back new calls complete, every answer resumes its call
exactly once (the MCP server's request log shows it), and no call stays running or resuming; `/readyz`
says 503 while the database is away and 200 once the process can work again.

The suite stops the database for 1 s; `make faults` also for 10 s and 60 s (CONSOLE_FAULTS_LONG=1).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.faults.load import Load, check_each_call
from tests.harness import seed, stdio_mrtr
from tests.pgcluster import Cluster, private_cluster
from tests.processes import console_process

pytestmark = [pytest.mark.anyio, pytest.mark.faults, pytest.mark.slow]

LONG = pytest.mark.skipif(not os.environ.get("CONSOLE_FAULTS_LONG"), reason="long: `make faults` runs it")
AGENTS = 3
BACK_WITHIN = 30.0  # after the database is back: the console works again, and every call under way ends
BEFORE_OUTAGE = 120.0  # for the console's first calls, and those after the restart, on a busy machine


@pytest.mark.timeout(400)
@pytest.mark.parametrize("outage", [1.0, pytest.param(10.0, marks=LONG), pytest.param(60.0, marks=LONG)])
async def test_a_console_goes_on_after_its_database_restarts_and_stops(outage: float, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with private_cluster() as cluster:
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
                        away, back = await _restart_then_stop(cluster, load, http, outage)
                        with anyio.fail_after(BACK_WITHIN):
                            ready = await _until_ready(http)
                            while len(_completed(load.ended_after(back))) < AGENTS:
                                await load.completed.wait()
                            stop.set()
                            await load.agents_stopped.wait()
                    approving.cancel_scope.cancel()

    assert away.status_code == 503, away.text
    assert away.json()["status"] == "database unavailable"
    assert ready.json() == {"status": "ready"}
    assert len(_completed(load.ended_after(back))) >= AGENTS
    check_each_call(load, log)


async def _restart_then_stop(
    cluster: Cluster, load: Load, http: httpx.AsyncClient, outage: float
) -> tuple[httpx.Response, float]:
    """Restart the database under load, then, once calls complete again, stop it for `outage` seconds;
    what `/readyz` said while it was stopped, and when it was back (anyio's clock)."""
    with anyio.fail_after(BEFORE_OUTAGE):
        await load.completions(AGENTS)
        await anyio.to_thread.run_sync(cluster.restart)
        await load.completions(AGENTS)
    await anyio.to_thread.run_sync(cluster.stop)
    away = await _readiness(http)
    await anyio.sleep(outage)  # the fault itself: how long the database stays away
    await anyio.to_thread.run_sync(cluster.start)
    return away, anyio.current_time()


async def _until_ready(http: httpx.AsyncClient) -> httpx.Response:
    while True:
        answer = await _readiness(http)
        if answer.status_code == 200:
            return answer
        await anyio.sleep(0.2)  # polling: nothing announces readiness


async def _readiness(http: httpx.AsyncClient) -> httpx.Response:
    """What `/readyz` answers (its 503 included), asked again if the connection failed."""
    while True:
        try:
            return await http.get("/readyz")
        except httpx.TransportError:
            await anyio.sleep(0.2)


def _completed(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [call for call in calls if call["status"] == "completed"]
