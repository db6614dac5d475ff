"""B2 answer-to-resume latency: from the answer request returning to the resume arriving at the server,
without and with three notification channels (one of them down) in the same run: a channel must never
slow answering and resuming, so the ratio of the two medians should stay near 1."""

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


async def _one_database(
    kind: str, work: Path, sizes: Sizes, postgres_url: str, channels: bool
) -> dict[str, Any]:
    with procs.mcp_server(work) as server:
        async with console_with_agent(kind, work, postgres_url, server.url, channels=channels) as (agent, _):
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
    results: dict[str, Any] = {}
    for kind in kinds:
        plain = await _one_database(kind, work, sizes, postgres_url, channels=False)
        notified = await _one_database(kind, work, sizes, postgres_url, channels=True)
        ratio = notified["from_answer_sent_s"]["p50"] / plain["from_answer_sent_s"]["p50"]
        results[kind] = {"plain": plain, "channels": notified, "channels_ratio_p50": ratio}
    return results


def render(result: dict[str, Any]) -> str:
    rows = []
    for kind, found in result.items():
        for setup in ("plain", "channels"):
            for label, key in (
                ("answer returned", "from_answer_returned_s"),
                ("answer sent", "from_answer_sent_s"),
            ):
                values = found[setup][key]
                shown = "none" if setup == "plain" else "3, one down"
                rows.append(
                    [
                        kind,
                        shown,
                        label,
                        ms(values["p50"]),
                        ms(values["p95"]),
                        ms(values["p99"]),
                        found[setup]["samples"],
                    ]
                )
    ratios = ", ".join(f"{kind} {found['channels_ratio_p50']:.2f}" for kind, found in result.items())
    return (
        table(
            "B2 answer-to-resume latency (resume timestamped at the MCP server, ms)",
            ["database", "channels", "measured from", "p50", "p95", "p99", "n"],
            rows,
        )
        + f"\nwith channels / without, p50 from the answer sent: {ratios}"
    )
