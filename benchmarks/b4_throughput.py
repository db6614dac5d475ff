"""B4 throughput: complete round trips per second (call → input_required → answer → resume → complete)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import procs
from benchmarks.agent import Agent, ApiError, console_with_agent
from benchmarks.config import Sizes
from benchmarks.stats import table


async def _measure(agent: Agent, agents: int, seconds: float) -> dict[str, Any]:
    runs = [await agent.new_run(f"b4-{agents}-{i}") for i in range(agents)]
    for i, run_id in enumerate(runs):  # warm-up: each agent once
        await agent.round_trip(run_id, "bench", f"warm-{agents}-{i}")
    done = 0
    errors: list[str] = []
    deadline = time.perf_counter() + seconds

    async def loop(index: int, run_id: str) -> None:
        nonlocal done
        n = 0
        while time.perf_counter() < deadline:
            try:
                await agent.round_trip(run_id, "bench", f"b4-{agents}-{index}-{n}")
                done += 1
            except ApiError as exc:
                errors.append(str(exc))
            n += 1

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for index, run_id in enumerate(runs):
            tg.start_soon(loop, index, run_id)
    elapsed = time.perf_counter() - start
    return {
        "agents": agents,
        "round_trips": done,
        "seconds": elapsed,
        "per_second": done / elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


async def _one_database(
    kind: str, work: Path, sizes: Sizes, postgres_url: str, workers: int, agents: tuple[int, ...]
) -> list[dict[str, Any]]:
    with procs.mcp_server(work) as server:
        async with console_with_agent(kind, work, postgres_url, server.url, workers=workers) as (agent, _):
            return [{**await _measure(agent, n, sizes.b4_seconds), "processes": workers} for n in agents]


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    result = {
        kind: await _one_database(kind, work, sizes, postgres_url, 1, sizes.b4_agents) for kind in kinds
    }
    if "postgres" in kinds:  # more console processes on the one database, with the most agents
        for workers in sizes.b4_processes[1:]:
            result["postgres"] += await _one_database(
                "postgres", work, sizes, postgres_url, workers, sizes.b4_agents[-1:]
            )
    return result


def render(result: dict[str, Any]) -> str:
    rows = [
        [kind, m.get("processes", 1), m["agents"], m["round_trips"], f"{m['per_second']:.1f}", m["errors"]]
        for kind, measured in result.items()
        for m in measured
    ]
    return table(
        "B4 throughput: complete round trips per second (console serve --workers N on one machine)",
        ["database", "processes", "agents", "round trips", "per second", "errors"],
        rows,
    )
