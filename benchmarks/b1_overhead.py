"""B1 call overhead: a tool call that completes at once, through the console's API versus the SDK directly,
and versus the floor: an API that does only what recording each call durably cannot avoid
(benchmarks/floor_api.py)."""

from __future__ import annotations

import importlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks import procs
from benchmarks.agent import Agent
from benchmarks.config import Sizes
from benchmarks.setup import database, seed
from benchmarks.stats import median, ms, table
from console.app import create_app
from console.config import Settings
from console.db import NO_BEGIN
from console.runtime import runtime_of

# Wall-clock phases of one call through the console, timed around these coroutines in-process.
PHASES = (
    ("authenticate the token", "console.web.deps", "authenticate_token"),
    ("record the call (start_call)", "console.dispatch.follow", "start_call"),
    ("dispatcher: claim polls (new calls are handed over)", "console.dispatch.worker", "Dispatcher._claim"),
    ("dispatcher: prepare the send", "console.dispatch.worker", "Dispatcher._prepare"),
    ("MCP request to the server", "console.dispatch.worker", "ConnectionPool.send"),
    ("dispatcher: record the reply", "console.dispatch.worker", "Dispatcher._record"),
    ("read the call back (view_call)", "console.web.api", "calls.view_call"),
)
LEGS = {
    "direct": "direct (mcp SDK Client)",
    "floor": "floor: token, two durable rows (benchmarks/floor_api.py)",
    "records": "floor with the console's records (benchmarks/floor_records.py)",
    "console": "through the console API",
}
TARGET_OVER_DIRECT = 3.0
TARGET_OVER_FLOOR = 1.5
TRANSACTIONS = "transactions (BEGIN ... COMMIT) per call"
WITHOUT_BEGIN = "reads without BEGIN per call"
STATEMENTS = "SQL statements per call (besides BEGIN and COMMIT)"
COUNTS = (TRANSACTIONS, WITHOUT_BEGIN, STATEMENTS)


async def direct_calls(url: str, sizes: Sizes) -> list[float]:
    """`echo` with the SDK's own Client straight to the server: the baseline of B1 and B6."""
    samples: list[float] = []
    async with Client(url) as client:
        for i in range(sizes.warmup):
            await client.call_tool("echo", {"x": f"w{i}"})
        for i in range(sizes.b1_calls):
            start = time.perf_counter()
            await client.call_tool("echo", {"x": str(i)})
            samples.append(time.perf_counter() - start)
    return samples


async def _through_api(agent: Agent, run_id: str, sizes: Sizes) -> list[float]:
    """`echo` with the agent's HTTP client through an API that speaks the console's (the console or the
    floor)."""
    for i in range(sizes.warmup):
        await agent.call(run_id, "bench", "echo", {"x": f"w{i}"})
    samples: list[float] = []
    for i in range(sizes.b1_calls):
        start = time.perf_counter()
        done = await agent.call(run_id, "bench", "echo", {"x": str(i)})
        samples.append(time.perf_counter() - start)
        if done["status"] != "completed":
            raise RuntimeError(f"echo through {agent.http.base_url} ended {done['status']}")
    return samples


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    """Per database kind, the three legs side by side in alternating repetitions, against one MCP server
    process; then where the console's time goes (in-process, on each database kind)."""
    with procs.mcp_server(work) as server:
        databases = {kind: await _side_by_side(kind, work, sizes, postgres_url, server.url) for kind in kinds}
        profile = {kind: await _profile(kind, work, server.url, sizes, postgres_url) for kind in kinds}
    first = databases[kinds[0]]
    return {
        "ratio": first["ratio"],
        "over_floor": first["over_floor"],
        "databases": databases,
        "profile": profile,
    }


async def _side_by_side(
    kind: str, work: Path, sizes: Sizes, postgres_url: str, server_url: str
) -> dict[str, Any]:
    floor_token = secrets.token_urlsafe(32)
    legs: dict[str, list[float]] = {leg: [] for leg in LEGS}
    async with (
        floor_database(kind, work, postgres_url) as floor_url,
        database(kind, work, postgres_url) as url,
    ):
        token = await seed(url, {"bench": server_url})
        with (
            procs.console(url, work) as console,
            procs.floor_api(work, server_url, floor_url, floor_token) as floor,
            procs.floor_records(work, server_url, url) as records,
        ):
            agents = {"floor": Agent(floor.url, floor_token), "records": Agent(records.url, token)}
            agents["console"] = Agent(console.url, token)
            try:
                run_id = await agents["console"].new_run("b1")
                for _ in range(sizes.repetitions):
                    legs["direct"].extend(await direct_calls(server_url, sizes))
                    legs["floor"].extend(await _through_api(agents["floor"], "floor", sizes))
                    legs["records"].extend(await _through_api(agents["records"], run_id, sizes))
                    legs["console"].extend(await _through_api(agents["console"], run_id, sizes))
            finally:
                for agent in agents.values():
                    await agent.aclose()
    medians = {leg: median(samples) for leg, samples in legs.items()}
    return {
        **{f"{leg}_median_s": seconds for leg, seconds in medians.items()},
        "ratio": medians["console"] / medians["direct"],
        "over_floor": medians["console"] / medians["floor"],
        "over_records": medians["console"] / medians["records"],
        "samples": len(legs["direct"]),
    }


@asynccontextmanager
async def floor_database(kind: str, work: Path, postgres_url: str) -> AsyncIterator[str]:
    """A database of `kind` for the floor's own tables: a SQLite file, or a throwaway PostgreSQL database."""
    if kind == "sqlite":
        yield f"sqlite+aiosqlite:///{work / f'floor-api-{secrets.token_hex(4)}.db'}"
        return
    async with database(kind, work, postgres_url) as url:
        yield url


async def _profile(
    kind: str, work: Path, server_url: str, sizes: Sizes, postgres_url: str
) -> dict[str, float]:
    """Where a console call's time goes: the same calls in-process, wall-clock per phase, ms per call."""
    async with database(kind, work, postgres_url) as url:
        token = await seed(url, {"bench": server_url})
        settings = Settings(database_url=url, env="dev", base_url="http://console.bench")
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            agent = Agent("http://console.bench", token, transport=httpx.ASGITransport(app=app))
            try:
                run_id = await agent.new_run("b1-profile")
                for i in range(sizes.warmup):
                    await agent.call(run_id, "bench", "echo", {"x": f"w{i}"})
                with _timed_phases() as spent, _counted_sql(runtime_of(app).engine) as sql:
                    start = time.perf_counter()
                    for i in range(sizes.b1_calls):
                        await agent.call(run_id, "bench", "echo", {"x": str(i)})
                    whole = time.perf_counter() - start
            finally:
                await agent.aclose()
    per_call = {label: 1000 * seconds / sizes.b1_calls for label, seconds in spent.items()}
    per_call["whole call through the API"] = 1000 * whole / sizes.b1_calls
    per_call.update({label: count / sizes.b1_calls for label, count in sql.items()})
    return {label: round(value, 2) for label, value in per_call.items()}


@contextmanager
def _counted_sql(engine: AsyncEngine) -> Iterator[dict[str, int]]:
    """Database transactions and SQL statements the console runs meanwhile (all of its tasks). Reads
    without BEGIN (console/db.py `reads_without_begin`) begin a transaction in SQLAlchemy too, but send no
    BEGIN and COMMIT: they are counted apart."""
    counts = dict.fromkeys(COUNTS, 0)

    def began(connection: Any) -> None:
        options = connection.get_execution_options()
        no_begin = options.get(NO_BEGIN) or options.get("isolation_level") == "AUTOCOMMIT"
        counts[WITHOUT_BEGIN if no_begin else TRANSACTIONS] += 1

    def executed(_connection: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not statement.startswith("BEGIN"):  # SQLite's BEGIN IMMEDIATE (console/db.py)
            counts[STATEMENTS] += 1

    hooks: tuple[tuple[str, Callable[..., None]], ...] = (
        ("begin", began),
        ("before_cursor_execute", executed),
    )
    for name, hook in hooks:
        event.listen(engine.sync_engine, name, hook)
    try:
        yield counts
    finally:
        for name, hook in hooks:
            event.remove(engine.sync_engine, name, hook)


@contextmanager
def _timed_phases() -> Iterator[dict[str, float]]:
    """Wrap each phase's coroutine (where the route or worker looks it up) to add up its wall time."""
    spent = {label: 0.0 for label, _, _ in PHASES}
    undo: list[tuple[Any, str, Any]] = []
    for label, module_name, path in PHASES:
        owner: Any = importlib.import_module(module_name)
        *parents, attribute = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original = getattr(owner, attribute)
        setattr(owner, attribute, _timing(original, label, spent))
        undo.append((owner, attribute, original))
    try:
        yield spent
    finally:
        for owner, attribute, original in undo:
            setattr(owner, attribute, original)


def _timing(
    original: Callable[..., Awaitable[Any]], label: str, spent: dict[str, float]
) -> Callable[..., Awaitable[Any]]:
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    return timed


def render(result: dict[str, Any]) -> str:
    rows = []
    for kind, found in result["databases"].items():
        for leg, label in LEGS.items():
            seconds = found[f"{leg}_median_s"]
            rows.append(
                [
                    kind,
                    label,
                    ms(seconds),
                    f"{seconds / found['direct_median_s']:.2f}",
                    _over(found, leg, "floor"),
                    _over(found, leg, "records"),
                ]
            )
        met = found["ratio"] <= TARGET_OVER_DIRECT and found["over_floor"] <= TARGET_OVER_FLOOR
        target = f"target: console <= {TARGET_OVER_DIRECT:g}x direct and <= {TARGET_OVER_FLOOR:g}x floor"
        rows.append([kind, target, "met" if met else "missed", "", "", ""])
    samples = next(iter(result["databases"].values()))["samples"]
    head = table(
        f"B1 call overhead: a call with no questions (median of {samples} each, ms)",
        ["database", "path", "median ms", "x direct", "x floor", "x records"],
        rows,
    )
    profiles: dict[str, dict[str, float]] = result["profile"]
    kinds = list(profiles)
    phases = [phase for phase in next(iter(profiles.values())) if phase not in COUNTS]
    areas = table(
        "B1 where a call's time goes through the console (in-process, wall clock, ms per call; the whole "
        "also has routing, serialisation and wake-ups)",
        ["phase", *kinds],
        [[phase, *(f"{profiles[kind][phase]:.1f}" for kind in kinds)] for phase in phases],
    )
    counts = table(
        "B1 database work per call through the console (in-process)",
        ["what", *kinds],
        [[what, *(f"{profiles[kind][what]:.1f}" for kind in kinds)] for what in COUNTS],
    )
    return f"{head}\n\n{areas}\n\n{counts}"


def _over(found: dict[str, Any], leg: str, floor: str) -> str:
    """The leg's median over a floor's, for the floor and what costs more than it."""
    if list(LEGS).index(leg) < list(LEGS).index(floor):
        return ""
    return f"{found[f'{leg}_median_s'] / found[f'{floor}_median_s']:.2f}"
