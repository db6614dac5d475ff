"""B1 call overhead: a tool call that completes at once, through the console's API versus the SDK directly."""

from __future__ import annotations

import importlib
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from mcp import Client
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks import procs
from benchmarks.agent import Agent, console_with_agent
from benchmarks.config import Sizes
from benchmarks.setup import database, seed
from benchmarks.stats import median, ms, table
from console.app import create_app
from console.config import Settings

# Wall-clock phases of one call through the console, timed around these coroutines in-process.
PHASES = (
    ("authenticate the token", "console.web.deps", "authenticate_token"),
    ("record the call (start_call)", "console.web.api", "calls.start_call"),
    ("dispatcher: claim polls (new calls are handed over)", "console.dispatch.worker", "Dispatcher._claim"),
    ("dispatcher: prepare the send", "console.dispatch.worker", "Dispatcher._prepare"),
    ("MCP request to the server", "console.dispatch.worker", "ConnectionPool.send"),
    ("dispatcher: record the reply", "console.dispatch.worker", "Dispatcher._record"),
    ("read the call back (view_call)", "console.web.api", "calls.view_call"),
)
TRANSACTIONS = "database transactions per call"
STATEMENTS = "SQL statements per call (besides BEGIN and COMMIT)"
COUNTS = (TRANSACTIONS, STATEMENTS)


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


async def _console(agent: Agent, sizes: Sizes) -> list[float]:
    run_id = await agent.new_run("b1")
    for i in range(sizes.warmup):
        await agent.call(run_id, "bench", "echo", {"x": f"w{i}"})
    samples: list[float] = []
    for i in range(sizes.b1_calls):
        start = time.perf_counter()
        done = await agent.call(run_id, "bench", "echo", {"x": str(i)})
        samples.append(time.perf_counter() - start)
        if done["status"] != "completed":
            raise RuntimeError(f"echo through the console ended {done['status']}")
    return samples


async def run(work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    """Side by side, alternating repetitions, against one MCP server process."""
    with procs.mcp_server(work) as server:
        direct: list[float] = []
        through: list[float] = []
        async with console_with_agent("sqlite", work, postgres_url, server.url) as (agent, _):
            for _ in range(sizes.repetitions):
                direct.extend(await direct_calls(server.url, sizes))
                through.extend(await _console(agent, sizes))
        profile = await _profile(work, server.url, sizes, postgres_url)
    ratio = median(through) / median(direct)
    return {
        "direct_median_s": median(direct),
        "console_median_s": median(through),
        "ratio": ratio,
        "samples": len(direct),
        "profile": profile,
    }


async def _profile(work: Path, server_url: str, sizes: Sizes, postgres_url: str) -> dict[str, float]:
    """Where a console call's time goes: the same calls in-process, wall-clock per phase, ms per call."""
    async with database("sqlite", work, postgres_url) as url:
        token = await seed(url, {"bench": server_url})
        settings = Settings(database_url=url, env="dev", base_url="http://console.bench")
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            agent = Agent("http://console.bench", token, transport=httpx.ASGITransport(app=app))
            try:
                run_id = await agent.new_run("b1-profile")
                for i in range(sizes.warmup):
                    await agent.call(run_id, "bench", "echo", {"x": f"w{i}"})
                with _timed_phases() as spent, _counted_sql(app.state.factory.kw["bind"]) as sql:
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
    """Database transactions and SQL statements the console runs meanwhile (all of its tasks)."""
    counts = {TRANSACTIONS: 0, STATEMENTS: 0}

    def began(*_: Any) -> None:
        counts[TRANSACTIONS] += 1

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
    rows = [
        ["direct (mcp SDK Client)", ms(result["direct_median_s"]), "1.00"],
        ["through the console API", ms(result["console_median_s"]), f"{result['ratio']:.2f}"],
    ]
    head = table(
        f"B1 call overhead: a call with no questions (median of {result['samples']} each, ms)",
        ["path", "median ms", "ratio"],
        rows,
    )
    areas = table(
        "B1 where a call's time goes through the console (in-process, wall clock, ms per call; the whole "
        "also has routing, serialisation and wake-ups)",
        ["phase", "ms per call"],
        [[phase, f"{value:.1f}"] for phase, value in result["profile"].items() if phase not in COUNTS],
    )
    counts = table(
        "B1 database work per call through the console (in-process)",
        ["what", "per call"],
        [[what, f"{result['profile'][what]:.1f}"] for what in COUNTS],
    )
    return f"{head}\n\n{areas}\n\n{counts}"
