"""B5 versus holding calls open: memory and connections per waiting call, pre-2026 client vs the console."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import procs
from benchmarks.agent import Agent, console_with_agent
from benchmarks.config import Sizes
from benchmarks.stats import table

PARK_CONCURRENCY = 16
REPLY_TIMEOUT = 300.0


async def _park_many(agent: Agent, run_id: str, prefix: str, count: int) -> None:
    limiter = anyio.Semaphore(PARK_CONCURRENCY)

    async def one(i: int) -> None:
        async with limiter:
            await agent.park(run_id, "bench", f"{prefix}-{i}")

    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(one, i)


async def _console(work: Path, server: procs.Proc, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    async with console_with_agent("sqlite", work, postgres_url, server.url) as (agent, console):
        run_id = await agent.new_run("b5")
        await _park_many(agent, run_id, "warm", sizes.warmup * 5)
        before = console.rss()
        await _park_many(agent, run_id, "wait", sizes.b5_calls)
        return {
            "rss_before": before,
            "rss_waiting": console.rss(),
            "server_connections": console.connections_to(server.url),
        }


def _command(holder: procs.Proc, text: str, expect: str) -> None:
    if holder.process.stdin is None or holder.process.stdout is None:
        raise RuntimeError("the holder was started without pipes")
    holder.process.stdin.write(f"{text}\n".encode())
    holder.process.stdin.flush()
    fd, deadline, line = holder.process.stdout.fileno(), time.monotonic() + REPLY_TIMEOUT, b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError(f"holder did not answer {text!r}")
        line += os.read(fd, 1)
    if not line.decode().startswith(expect):
        raise RuntimeError(f"holder answered {line!r} to {text!r}")


def _holding(work: Path, server: procs.Proc, sizes: Sizes) -> dict[str, Any]:
    argv = [sys.executable, "-m", "benchmarks.holder", server.url]
    with procs.started(argv, work / "holder.log", stdin=True) as holder:
        warm = sizes.warmup * 5
        _command(holder, f"hold {warm}", "holding")
        _command(holder, "release", "released")
        before = holder.rss()
        _command(holder, f"hold {sizes.b5_calls}", "holding")
        found = {
            "rss_before": before,
            "rss_waiting": holder.rss(),
            "server_connections": holder.connections_to(server.url),
        }
        _command(holder, "release", "released")
        return found


async def run(work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    with procs.mcp_server(work) as server:
        holding = _holding(work, server, sizes)
    with procs.mcp_server(work) as server:
        console = await _console(work, server, sizes, postgres_url)
    result: dict[str, Any] = {"calls": sizes.b5_calls, "holding_open": holding, "console": console}
    for side in ("holding_open", "console"):
        found = result[side]
        found["bytes_per_call"] = (found["rss_waiting"] - found["rss_before"]) / sizes.b5_calls
    per_console = max(result["console"]["bytes_per_call"], 1.0)
    result["memory_ratio"] = result["holding_open"]["bytes_per_call"] / per_console
    return result


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            label,
            f"{found['rss_waiting'] / 2**20:.1f}",
            f"{found['bytes_per_call'] / 1024:.1f}",
            found["server_connections"],
        ]
        for label, found in (
            ("client holding calls open (2025-11-25)", result["holding_open"]),
            ("console, calls parked (2026-07-28)", result["console"]),
        )
    ]
    return table(
        f"B5 {result['calls']:,} waiting calls: memory and connections "
        f"(holding open uses {result['memory_ratio']:.1f}x the memory per waiting call)",
        ["who waits", "RSS MiB", "KiB per waiting call", "connections to MCP server"],
        rows,
    )
