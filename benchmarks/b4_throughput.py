"""B4 throughput: complete round trips per second (call → input_required → answer → resume → complete),
and the floor's: how many calls per second B1's floor API (benchmarks/floor_api.py) records on this
machine with the most agents, which bounds the round trips any recorded design can reach here. Each leg
also says where the CPU went: milliseconds of CPU per round trip (or floor call) spent by the console (or
the floor), the MCP server, the agents and PostgreSQL, and how many of the machine's cores were busy."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio

from benchmarks import cpu, procs
from benchmarks.agent import Agent, ApiError, console_with_agent
from benchmarks.b1_overhead import floor_database
from benchmarks.config import Sizes
from benchmarks.stats import table

# A round trip sends two recorded MCP requests (the call and its resume) and records a third request (the
# answer), so it costs at least two of the floor's calls: the floor allows at most half its calls/s.
FLOOR_CALLS_PER_ROUND_TRIP = 2


async def _measure(
    agent: Agent, agents: int, seconds: float, processes: dict[str, cpu.Finder]
) -> dict[str, Any]:
    runs = [await agent.new_run(f"b4-{agents}-{i}") for i in range(agents)]
    for i, run_id in enumerate(runs):  # warm-up: each agent once
        await agent.round_trip(run_id, "bench", f"warm-{agents}-{i}")

    async def one(run_id: str, tag: str) -> None:
        await agent.round_trip(run_id, "bench", tag)

    with cpu.measured(processes) as spent:
        measured = await _for_a_while(runs, one, seconds)
    return {**measured, "round_trips": measured.pop("done"), "agents": agents, "cpu": spent}


def _processes(kind: str, serving: list[procs.Proc], server: procs.Proc) -> dict[str, cpu.Finder]:
    """Whose CPU B4 counts: what serves the agents (the console or the floors), the MCP server, the agents
    (this process) and, on PostgreSQL, the database server."""
    found = {
        "serving": cpu.trees([proc.pid for proc in serving]),
        "mcp_server": cpu.trees([server.pid]),
        "agents": cpu.this_process,
    }
    return {**found, "postgres": cpu.postgres} if kind == "postgres" else found


async def _floor_calls(
    agents: list[Agent], count: int, seconds: float, processes: dict[str, cpu.Finder]
) -> dict[str, Any]:
    """`echo` calls per second through the floor APIs from `count` agents, each on one of `agents`."""
    agent_of = {f"floor-{i}": agents[i % len(agents)] for i in range(count)}
    runs = list(agent_of)

    async def one(run_id: str, tag: str) -> None:
        done = await agent_of[run_id].call(run_id, "bench", "echo", {"x": tag})
        if done["status"] != "completed":
            raise ApiError(f"echo through the floor ended {done['status']}")

    for run_id in runs:  # warm-up: each agent once
        await one(run_id, f"warm-{run_id}")
    with cpu.measured(processes) as spent:
        measured = await _for_a_while(runs, one, seconds)
    return {**measured, "calls": measured.pop("done"), "agents": count, "cpu": spent}


async def _for_a_while(
    runs: list[str], one: Callable[[str, str], Awaitable[None]], seconds: float
) -> dict[str, Any]:
    """Each run's agent repeats `one` until `seconds` have passed; how many completed, and how fast."""
    done = 0
    errors: list[str] = []
    deadline = time.perf_counter() + seconds

    async def loop(index: int, run_id: str) -> None:
        nonlocal done
        n = 0
        while time.perf_counter() < deadline:
            try:
                await one(run_id, f"b4-{index}-{n}")
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
        "done": done,
        "seconds": elapsed,
        "per_second": done / elapsed,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
    }


async def _one_database(
    kind: str, work: Path, sizes: Sizes, postgres_url: str, workers: int, agents: tuple[int, ...]
) -> list[dict[str, Any]]:
    with procs.mcp_server(work) as server:
        async with console_with_agent(kind, work, postgres_url, server.url, workers=workers) as (
            agent,
            console,
        ):
            counted = _processes(kind, [console], server)
            return [
                {**await _measure(agent, n, sizes.b4_seconds, counted), "processes": workers} for n in agents
            ]


async def _floor(kind: str, work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    """B1's floor API, one process per CPU on one database (one on SQLite), with B4's most agents."""
    token = secrets.token_urlsafe(32)
    processes = 1 if kind == "sqlite" else os.cpu_count() or 1
    with procs.mcp_server(work) as server:
        async with floor_database(kind, work, postgres_url) as url:
            with ExitStack() as stack:
                floors = [
                    stack.enter_context(procs.floor_api(work, server.url, url, token))
                    for _ in range(processes)
                ]
                agents = [Agent(floor.url, token) for floor in floors]
                try:
                    counted = _processes(kind, floors, server)
                    measured = await _floor_calls(agents, sizes.b4_agents[-1], sizes.b4_seconds, counted)
                finally:
                    for agent in agents:
                        await agent.aclose()
    return {**measured, "processes": processes}


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    result: dict[str, Any] = {
        kind: await _one_database(kind, work, sizes, postgres_url, 1, sizes.b4_agents) for kind in kinds
    }
    if "postgres" in kinds:  # more console processes on the one database, with the most agents
        for workers in sizes.b4_processes[1:]:
            result["postgres"] += await _one_database(
                "postgres", work, sizes, postgres_url, workers, sizes.b4_agents[-1:]
            )
    floors = {kind: await _floor(kind, work, sizes, postgres_url) for kind in kinds}
    return {"consoles": result, "floors": floors}


def render(result: dict[str, Any]) -> str:
    rows = [
        [kind, m.get("processes", 1), m["agents"], m["round_trips"], f"{m['per_second']:.1f}", m["errors"]]
        for kind, measured in result["consoles"].items()
        for m in measured
    ]
    consoles = table(
        "B4 throughput: complete round trips per second (console serve --workers N on one machine)",
        ["database", "processes", "agents", "round trips", "per second", "errors"],
        rows,
    )
    floors = table(
        "B4 floor: calls per second through B1's floor API (benchmarks/floor_api.py), and the round trips "
        f"per second that allows (each costs at least {FLOOR_CALLS_PER_ROUND_TRIP} such calls)",
        ["database", "processes", "agents", "calls", "calls per second", "round trips/s at most", "errors"],
        [
            [
                kind,
                f["processes"],
                f["agents"],
                f["calls"],
                f"{f['per_second']:.1f}",
                f"{f['per_second'] / FLOOR_CALLS_PER_ROUND_TRIP:.1f}",
                f["errors"],
            ]
            for kind, f in result["floors"].items()
        ],
    )
    return f"{consoles}\n\n{floors}\n\n{_render_cpu(result)}"


CPU_GROUPS = ("serving", "mcp_server", "agents", "postgres")


def _render_cpu(result: dict[str, Any]) -> str:
    """Milliseconds of CPU per round trip (per call for the floor) by whom, the machine's busy cores, and
    the most per second those costs allow on this machine's cores."""
    legs = [("console", kind, m, m["round_trips"]) for kind, ms in result["consoles"].items() for m in ms]
    legs += [("floor", kind, f, f["calls"]) for kind, f in result["floors"].items()]
    rows = []
    for leg, kind, measured, done in legs:
        spent = measured["cpu"]
        per = {group: 1000 * spent[group] / done if done and group in spent else None for group in CPU_GROUPS}
        total = sum(v for v in per.values() if v is not None)
        rows.append(
            [
                leg,
                kind,
                measured["processes"],
                measured["agents"],
                *("-" if per[group] is None else f"{per[group]:.1f}" for group in CPU_GROUPS),
                f"{spent['busy_cores']:.2f} of {spent['cores']}",
                f"{1000 * spent['cores'] / total:.0f}" if total else "-",
            ]
        )
    return table(
        "B4 where the CPU goes: ms of CPU per round trip (the floor: per call) spent by what serves the "
        "agents, the MCP server, the agents' side (the benchmark with its agents) and PostgreSQL (with its "
        "backends that ended); the machine's busy cores; and the most per second those costs allow on "
        "all of its cores",
        [
            "leg",
            "database",
            "processes",
            "agents",
            "serving",
            "MCP server",
            "agents' side",
            "PostgreSQL",
            "busy",
            "at most/s",
        ],
        rows,
    )
