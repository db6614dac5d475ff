"""B1 call overhead: a tool call that completes at once, through the console's API versus the SDK directly."""

from __future__ import annotations

import cProfile
import pstats
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import Client

from benchmarks import procs
from benchmarks.agent import Agent
from benchmarks.config import Sizes
from benchmarks.setup import database, seed
from benchmarks.stats import median, ms, table
from console.app import create_app
from console.config import Settings

BUCKETS = (
    ("database (SQLAlchemy, drivers)", ("sqlalchemy", "aiosqlite", "psycopg", "sqlite3")),
    ("MCP client (SDK, httpx2)", ("/mcp/", "mcp_types", "httpx2", "httpcore2", "h11")),
    ("web framework (FastAPI, Starlette, pydantic)", ("fastapi", "starlette", "pydantic", "jinja2")),
    ("agent side (httpx)", ("/httpx/", "/httpcore/")),
    ("console code", ("/console/",)),
    ("event loop and waiting", ("asyncio", "anyio", "selectors", "{method 'poll'", "{method 'select'")),
)


async def _direct(url: str, sizes: Sizes) -> list[float]:
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
        async with database("sqlite", work, postgres_url) as url:
            seeded = await seed(url, {"bench": server.url})
            with procs.console(url, work) as console:
                agent = Agent(console.url, seeded.token)
                direct: list[float] = []
                through: list[float] = []
                try:
                    for _ in range(sizes.repetitions):
                        direct.extend(await _direct(server.url, sizes))
                        through.extend(await _console(agent, sizes))
                finally:
                    await agent.aclose()
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
    """Where a console call's time goes: the same calls in-process under cProfile, by area."""
    async with database("sqlite", work, postgres_url) as url:
        seeded = await seed(url, {"bench": server_url})
        settings = Settings(database_url=url, env="dev", base_url="http://console.bench")
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            agent = Agent("http://console.bench", seeded.token, transport=httpx.ASGITransport(app=app))
            try:
                run_id = await agent.new_run("b1-profile")
                for i in range(sizes.warmup):
                    await agent.call(run_id, "bench", "echo", {"x": f"w{i}"})
                profiler = cProfile.Profile()
                profiler.enable()
                for i in range(sizes.b1_calls):
                    await agent.call(run_id, "bench", "echo", {"x": str(i)})
                profiler.disable()
            finally:
                await agent.aclose()
    return _by_area(pstats.Stats(profiler))


def _by_area(stats: pstats.Stats) -> dict[str, float]:
    totals: dict[str, float] = {}
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]  # pstats keeps its table untyped
    for (filename, _line, name), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        where = f"{filename} {name}"
        area = next((label for label, marks in BUCKETS if any(m in where for m in marks)), "other")
        totals[area] = totals.get(area, 0.0) + tottime
    whole = sum(totals.values()) or 1.0
    return {
        area: round(100 * seconds / whole, 1) for area, seconds in sorted(totals.items(), key=lambda i: -i[1])
    }


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
        "B1 where the console's time goes (in-process cProfile, share of CPU time)",
        ["area", "%"],
        [[area, f"{share:.1f}"] for area, share in result["profile"].items()],
    )
    return f"{head}\n\n{areas}"
