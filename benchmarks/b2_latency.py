"""B2 answer-to-resume latency: from the answer request returning to the resume arriving at the server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mcp import Client

from benchmarks import procs
from benchmarks.agent import RoundTrip, console_with_agent
from benchmarks.config import Sizes
from benchmarks.stats import ms, percentile, table


async def arrivals(server_url: str) -> dict[str, float]:
    """When each resume reached the server (the server's own clock, the same machine's)."""
    async with Client(server_url) as client:
        result = await client.call_tool("arrivals", {})
    text = "".join(getattr(part, "text", "") for part in result.content)
    found: dict[str, float] = json.loads(text)
    return found


async def _one_database(kind: str, work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    with procs.mcp_server(work) as server:
        async with console_with_agent(kind, work, postgres_url, server.url) as (agent, _):
            run_id = await agent.new_run("b2")
            for i in range(sizes.warmup):
                await agent.round_trip(run_id, "bench", f"warm-{i}")
            trips: dict[str, RoundTrip] = {}
            for i in range(sizes.b2_round_trips):
                tag = f"b2-{i}"
                trips[tag] = await agent.round_trip(run_id, "bench", tag)
            arrived = await arrivals(server.url)
    after_return = [arrived[tag] - trip.answer_returned for tag, trip in trips.items()]
    after_send = [arrived[tag] - trip.answer_sent for tag, trip in trips.items()]
    return {
        "samples": len(after_return),
        "from_answer_returned_s": _percentiles(after_return),
        "from_answer_sent_s": _percentiles(after_send),
        "resume_before_answer_returned": sum(1 for value in after_return if value < 0),
    }


def _percentiles(values: list[float]) -> dict[str, float]:
    return {f"p{p}": percentile(values, p) for p in (50, 95, 99)}


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    return {kind: await _one_database(kind, work, sizes, postgres_url) for kind in kinds}


def render(result: dict[str, Any]) -> str:
    rows = []
    for kind, found in result.items():
        for label, key in (
            ("answer returned", "from_answer_returned_s"),
            ("answer sent", "from_answer_sent_s"),
        ):
            values = found[key]
            rows.append(
                [kind, label, ms(values["p50"]), ms(values["p95"]), ms(values["p99"]), found["samples"]]
            )
    return table(
        "B2 answer-to-resume latency (resume timestamped at the MCP server, ms)",
        ["database", "measured from", "p50", "p95", "p99", "n"],
        rows,
    )
