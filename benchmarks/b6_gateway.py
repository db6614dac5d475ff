"""B6 gateway overhead: a tool call without questions through the console's MCP endpoint `/mcp`, with the
SDK's own `Client`, versus the same `Client` calling the server directly."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import procs
from benchmarks.b1_overhead import direct_calls
from benchmarks.config import Sizes
from benchmarks.setup import database, seed
from benchmarks.stats import median, ms, table

TARGET_RATIO = 2.0
TARGET_EXTRA_S = 0.005


async def _gateway(url: str, token: str, sizes: Sizes) -> list[float]:
    samples: list[float] = []
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        for i in range(sizes.warmup):
            await client.call_tool("bench__echo", {"x": f"w{i}"})
        for i in range(sizes.b1_calls):
            start = time.perf_counter()
            result = await client.call_tool("bench__echo", {"x": str(i)})
            samples.append(time.perf_counter() - start)
            if result.is_error:
                raise RuntimeError(f"echo through the gateway failed: {result.content}")
    return samples


async def run(work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    """Side by side, alternating repetitions, against one MCP server process and one `console serve`."""
    with procs.mcp_server(work) as server:
        direct: list[float] = []
        through: list[float] = []
        async with database("sqlite", work, postgres_url) as url:
            token = await seed(url, {"bench": server.url})
            with procs.console(url, work) as console:
                for _ in range(sizes.repetitions):
                    direct.extend(await direct_calls(server.url, sizes))
                    through.extend(await _gateway(console.url, token, sizes))
    direct_s, through_s = median(direct), median(through)
    return {
        "direct_median_s": direct_s,
        "gateway_median_s": through_s,
        "ratio": through_s / direct_s,
        "target_s": TARGET_RATIO * direct_s + TARGET_EXTRA_S,
        "samples": len(direct),
    }


def render(result: dict[str, Any]) -> str:
    met = "met" if result["gateway_median_s"] <= result["target_s"] else "missed"
    rows = [
        ["direct (mcp SDK Client)", ms(result["direct_median_s"]), "1.00"],
        ["through the console's /mcp", ms(result["gateway_median_s"]), f"{result['ratio']:.2f}"],
        [f"target: 2x direct + 5 ms ({met})", ms(result["target_s"]), ""],
    ]
    return table(
        f"B6 gateway overhead: a call with no questions, one SDK Client (median of {result['samples']}, ms)",
        ["path", "median ms", "ratio"],
        rows,
    )
