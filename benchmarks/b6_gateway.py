"""B6 gateway overhead: a tool call without questions through the console's MCP endpoint `/mcp`, with the
SDK's own `Client`, versus the same `Client` calling the server directly, and versus the floor: a gateway
that does only what recording each call durably cannot avoid (benchmarks/floor.py)."""

from __future__ import annotations

import secrets
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

LEGS = {
    "direct": "direct (mcp SDK Client)",
    "proxy": "an SDK proxy, nothing recorded",
    "floor": "floor: token, two durable rows",
    "console": "through the console's /mcp",
}
TARGET_RATIO = 2.0
TARGET_EXTRA_S = 0.005


async def _gateway(url: str, token: str, sizes: Sizes, tool: str = "bench__echo") -> list[float]:
    """`tool` through a gateway at `url` (the MCP endpoint itself) with the bearer `token` (if any)."""
    samples: list[float] = []
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        for i in range(sizes.warmup):
            await client.call_tool(tool, {"x": f"w{i}"})
        for i in range(sizes.b1_calls):
            start = time.perf_counter()
            result = await client.call_tool(tool, {"x": str(i)})
            samples.append(time.perf_counter() - start)
            if result.is_error:
                raise RuntimeError(f"echo through the gateway failed: {result.content}")
    return samples


async def run(work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    """Side by side, alternating repetitions, against one MCP server process and one `console serve`."""
    floor_token = secrets.token_urlsafe(32)
    with (
        procs.mcp_server(work) as server,
        procs.floor(work, server.url) as proxy,
        procs.floor(work, server.url, floor_token) as floor,
    ):
        legs: dict[str, list[float]] = {leg: [] for leg in LEGS}
        async with database("sqlite", work, postgres_url) as url:
            token = await seed(url, {"bench": server.url})
            with procs.console(url, work) as console:
                for _ in range(sizes.repetitions):
                    legs["direct"].extend(await direct_calls(server.url, sizes))
                    legs["proxy"].extend(await _gateway(proxy.url, "", sizes, "echo"))
                    legs["floor"].extend(await _gateway(floor.url, floor_token, sizes, "echo"))
                    legs["console"].extend(await _gateway(f"{console.url}/mcp", token, sizes))
    medians = {leg: median(samples) for leg, samples in legs.items()}
    return {
        **{f"{leg}_median_s": seconds for leg, seconds in medians.items()},
        "ratio": medians["console"] / medians["direct"],
        "over_floor": medians["console"] / medians["floor"],
        "target_s": TARGET_RATIO * medians["direct"] + TARGET_EXTRA_S,
        "samples": len(legs["direct"]),
    }


def render(result: dict[str, Any]) -> str:
    direct = result["direct_median_s"]
    met = "met" if result["console_median_s"] <= result["target_s"] else "missed"
    rows = [
        [label, ms(result[f"{leg}_median_s"]), f"{result[f'{leg}_median_s'] / direct:.2f}"]
        for leg, label in LEGS.items()
    ]
    rows.append([f"target: 2x direct + 5 ms ({met})", ms(result["target_s"]), ""])
    rows.append(["the console against the floor", "", f"{result['over_floor']:.2f}"])
    return table(
        f"B6 gateway overhead: a call with no questions, one SDK Client (median of {result['samples']}, ms)",
        ["path", "median ms", "ratio"],
        rows,
    )
