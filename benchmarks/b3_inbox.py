"""B3 scale of waiting: 100,000 pending questions in 1,000 runs; inbox API and page times, memory, sockets."""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx
from sqlalchemy import insert, select

from benchmarks import procs
from benchmarks.agent import Agent
from benchmarks.config import Sizes
from benchmarks.server import QUESTION_SCHEMA
from benchmarks.setup import AGENT, PASSWORD, database, seed
from benchmarks.stats import mib, ms, percentile, table
from console.calls.models import Call, CallRound, Elicitation, Run
from console.db import create_engine, new_id, session_factory, utcnow
from console.identity.models import Team, User
from console.mcp.models import McpServer

CHUNK = 5_000
OTHER_EVERY = 10  # every tenth question comes from the second server (the filtered page shows those)
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"')


async def bulk_questions(database_url: str, runs: int, questions: int) -> None:
    """`questions` pending form questions (one call and round each) spread over `runs` runs of the agent."""
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            team_id = (await session.execute(select(Team.id))).scalar_one()
            owner_id = (await session.execute(select(User.id).where(User.name == AGENT))).scalar_one()
            servers = dict((await session.execute(select(McpServer.name, McpServer.id))).tuples().all())
            start = utcnow() - timedelta(days=1)
            run_ids = [new_id() for _ in range(runs)]
            await session.execute(
                insert(Run),
                [
                    {
                        "id": r,
                        "team_id": team_id,
                        "owner_id": owner_id,
                        "title": f"run {i}",
                        "agent": "bench",
                        "created_at": start,
                    }
                    for i, r in enumerate(run_ids)
                ],
            )
            for first in range(0, questions, CHUNK):
                calls, rounds, rows = [], [], []
                for i in range(first, min(first + CHUNK, questions)):
                    at = start + timedelta(seconds=i * 0.5)
                    call_id, round_id = new_id(), new_id()
                    server = "other" if i % OTHER_EVERY == 0 else "bench"
                    params = json.dumps({"name": "ask", "arguments": {"tag": f"q{i}"}})
                    calls.append(
                        {
                            "id": call_id,
                            "run_id": run_ids[i % runs],
                            "server_id": servers[server],
                            "method": "tools/call",
                            "params_json": params,
                            "status": "awaiting_input",
                            "round": 1,
                            "created_at": at,
                            "updated_at": at,
                        }
                    )
                    rounds.append(
                        {
                            "id": round_id,
                            "call_id": call_id,
                            "n": 1,
                            "input_requests_json": "{}",
                            "request_state_json": json.dumps(f"q{i}"),
                            "status": "open",
                            "created_at": at,
                        }
                    )
                    digest = hashlib.sha256(f"q{i}".encode()).hexdigest()
                    rows.append(
                        {
                            "id": new_id(),
                            "round_id": round_id,
                            "call_id": call_id,
                            "team_id": team_id,
                            "owner_id": owner_id,
                            "key": "ok",
                            "mode": "form",
                            "message": f"Go ahead with q{i}?",
                            "schema_json": json.dumps(QUESTION_SCHEMA),
                            "request_digest": digest,
                            "digest": digest,
                            "status": "pending",
                            "created_at": at,
                            "expires_at": at + timedelta(days=30),
                        }
                    )
                await session.execute(insert(Call), calls)
                await session.execute(insert(CallRound), rounds)
                await session.execute(insert(Elicitation), rows)
            await session.commit()
        if not database_url.startswith("sqlite"):
            # Rows that arrive over days have planner statistics; autovacuum gathers them soon after a
            # bulk load like this one, so gather them now rather than measure plans made blind.
            async with engine.connect() as connection:
                await connection.execution_options(isolation_level="AUTOCOMMIT")
                await connection.exec_driver_sql("ANALYZE")
    finally:
        await engine.dispose()


async def _sign_in(base_url: str) -> httpx.AsyncClient:
    browser = httpx.AsyncClient(base_url=base_url, timeout=60)
    page = await browser.get("/login")
    fields = dict(HIDDEN.findall(page.text))
    response = await browser.post("/login", data={**fields, "name": AGENT, "password": PASSWORD})
    if response.status_code != 303:
        raise RuntimeError(f"sign-in failed: {response.status_code}")
    return browser


async def _timed(client: httpx.AsyncClient, path: str, params: dict[str, str], n: int) -> list[float]:
    samples = []
    for _ in range(n + 2):  # the first two warm up
        start = time.perf_counter()
        response = await client.get(path, params=params)
        samples.append(time.perf_counter() - start)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path}: {response.status_code}")
    return samples[2:]


async def _measure(console: procs.Proc, server_url: str, token: str, requests: int) -> dict[str, Any]:
    agent = Agent(console.url, token)
    browser = await _sign_in(console.url)
    try:
        run_id = await agent.new_run("b3-live")
        await agent.park(run_id, "bench", "b3-live")  # one real waiting call, so the console did talk MCP
        times = {
            "api_first_page": await _timed(agent.http, "/elicitations", {"status": "pending"}, requests),
            "api_filtered_page": await _timed(
                agent.http, "/elicitations", {"status": "pending", "server": "other"}, requests
            ),
            "page_first": await _timed(browser, "/", {}, requests),
            "page_filtered": await _timed(browser, "/", {"server": "other"}, requests),
        }
        await anyio.lowlevel.checkpoint()  # nothing in flight: what remains open is what waiting holds
        return {
            "times_s": {k: {"p50": percentile(v, 50), "p95": percentile(v, 95)} for k, v in times.items()},
            "rss_bytes": console.rss(),
            "mcp_connections": console.connections_to(server_url),
        }
    finally:
        await agent.aclose()
        await browser.aclose()


async def _one_database(kind: str, work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    found: dict[str, Any] = {"questions": sizes.b3_questions, "runs": sizes.b3_runs}
    with procs.mcp_server(work) as server:
        for label, count in (("empty", 0), ("full", sizes.b3_questions)):
            async with database(kind, work, postgres_url) as url:
                token = await seed(url, {"bench": server.url, "other": server.url})
                start = time.perf_counter()
                if count:
                    await bulk_questions(url, sizes.b3_runs, count)
                found[f"{label}_fill_s"] = time.perf_counter() - start
                with procs.console(url, work) as console:
                    found[label] = await _measure(console, server.url, token, sizes.b3_requests)
    return found


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    return {kind: await _one_database(kind, work, sizes, postgres_url) for kind in kinds}


def render(result: dict[str, Any]) -> str:
    rows = []
    for kind, found in result.items():
        for label in ("empty", "full"):
            times = found[label]["times_s"]
            rows.append(
                [
                    kind,
                    f"{found['questions'] if label == 'full' else 0:,}",
                    *(
                        f"{ms(times[k]['p50'])} / {ms(times[k]['p95'])}"
                        for k in ("api_first_page", "api_filtered_page", "page_first", "page_filtered")
                    ),
                    mib(found[label]["rss_bytes"]),
                    found[label]["mcp_connections"],
                ]
            )
    return table(
        "B3 scale of waiting: inbox times p50 / p95 ms, console RSS MiB, open connections to the MCP server",
        [
            "database",
            "pending",
            "API first",
            "API filtered",
            "page first",
            "page filtered",
            "RSS MiB",
            "MCP conns",
        ],
        rows,
    )
