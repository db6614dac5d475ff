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
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from benchmarks import cpu, procs
from benchmarks.agent import Agent, ApiError, console_with_agent
from benchmarks.b1_overhead import floor_database
from benchmarks.config import Sizes
from benchmarks.setup import TEAM, database, seed
from benchmarks.stats import table
from console.calls.service import create_run
from console.db import create_engine, session_factory
from console.identity.service import authenticate_token
from console.transactions import transaction

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
    agents: list[Agent], runs: list[str], seconds: float, processes: dict[str, cpu.Finder]
) -> dict[str, Any]:
    """`echo` calls per second through the floor APIs, one agent per run, each on one of `agents`."""
    agent_of = {run_id: agents[i % len(agents)] for i, run_id in enumerate(runs)}

    async def one(run_id: str, tag: str) -> None:
        done = await agent_of[run_id].call(run_id, "bench", "echo", {"x": tag})
        if done["status"] != "completed":
            raise ApiError(f"echo through the floor ended {done['status']}")

    for run_id in runs:  # warm-up: each agent once
        await one(run_id, f"warm-{run_id}")
    with cpu.measured(processes) as spent:
        measured = await _for_a_while(runs, one, seconds)
    return {**measured, "calls": measured.pop("done"), "agents": len(runs), "cpu": spent}


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


FLOORS = {
    "floor": "B1's floor API (benchmarks/floor_api.py)",
    "records": "B1's floor with the console's records (benchmarks/floor_records.py)",
}


async def _floor(kind: str, leg: str, work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    """One of B1's floors (`leg`), one process per CPU on one database (one on SQLite), with B4's most
    agents."""
    processes = 1 if kind == "sqlite" else os.cpu_count() or 1
    agents = sizes.b4_agents[-1]
    async with AsyncExitStack() as stack:
        server = stack.enter_context(procs.mcp_server(work))
        if leg == "floor":
            token = secrets.token_urlsafe(32)
            url = await stack.enter_async_context(floor_database(kind, work, postgres_url))
            runs = [f"floor-{i}" for i in range(agents)]
            started = [procs.floor_api(work, server.url, url, token) for _ in range(processes)]
        else:
            url = await stack.enter_async_context(database(kind, work, postgres_url))
            token = await seed(url, {"bench": server.url})
            runs = await _runs(url, token, agents)
            started = [procs.floor_records(work, server.url, url) for _ in range(processes)]
        floors = [stack.enter_context(floor) for floor in started]
        clients = [Agent(floor.url, token) for floor in floors]
        try:
            counted = _processes(kind, floors, server)
            measured = await _floor_calls(clients, runs, sizes.b4_seconds, counted)
        finally:
            for client in clients:
                await client.aclose()
    return {**measured, "processes": processes, "leg": leg, "kind": kind}


async def _runs(database_url: str, token: str, count: int) -> list[str]:
    """`count` runs of the token's user, made as the console makes them."""
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            principal = await authenticate_token(session=session, token=token)
            made = [
                await create_run(session=session, principal=principal, team=TEAM, title=f"b4-{i}", agent="b4")
                for i in range(count)
            ]
            return [run.id for run in made]
    finally:
        await engine.dispose()


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    result: dict[str, Any] = {
        kind: await _one_database(kind, work, sizes, postgres_url, 1, sizes.b4_agents) for kind in kinds
    }
    if "postgres" in kinds:  # more console processes on the one database, with the most agents
        for workers in sizes.b4_processes[1:]:
            result["postgres"] += await _one_database(
                "postgres", work, sizes, postgres_url, workers, sizes.b4_agents[-1:]
            )
    floors = [await _floor(kind, leg, work, sizes, postgres_url) for leg in FLOORS for kind in kinds]
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
        "B4 floors: calls per second through B1's floor API (benchmarks/floor_api.py) and through B1's "
        "floor with the console's records (benchmarks/floor_records.py), and the round trips per second "
        f"each allows (a round trip costs at least {FLOOR_CALLS_PER_ROUND_TRIP} such calls)",
        [
            "floor",
            "database",
            "processes",
            "agents",
            "calls",
            "calls per second",
            "round trips/s at most",
            "errors",
        ],
        [
            [
                f["leg"],
                f["kind"],
                f["processes"],
                f["agents"],
                f["calls"],
                f"{f['per_second']:.1f}",
                f"{f['per_second'] / FLOOR_CALLS_PER_ROUND_TRIP:.1f}",
                f["errors"],
            ]
            for f in result["floors"]
        ],
    )
    return f"{consoles}\n\n{floors}\n\n{_render_cpu(result)}"


CPU_GROUPS = ("serving", "mcp_server", "agents", "postgres")


def _render_cpu(result: dict[str, Any]) -> str:
    """Milliseconds of CPU per round trip (per call for the floor) by whom, the machine's busy cores, and
    the most per second those costs allow on this machine's cores."""
    legs = [("console", kind, m, m["round_trips"]) for kind, ms in result["consoles"].items() for m in ms]
    legs += [(f["leg"], f["kind"], f, f["calls"]) for f in result["floors"]]
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
