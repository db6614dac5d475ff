"""B7 audit chain at scale: audit events committed per second by 1, 4 and 16 writer processes, and whether
the chain's head row keeps B4 from its target of 100 round trips per second on PostgreSQL.

Each writer is a process with its own connection (benchmarks/writers.py, benchmarks/audit_writer.py)
committing one event per transaction through `record_event` and the chaining at commit, as the console
does, in three modes measured alternately: `wait`, every commit waits for the head row (the design before
`audit_pending`); `audit`, the console's now (chained when the head is free, else left waiting for the
next holder or a sequencer); and `plain`, one row of a table no two writers share a lock for: what the
database and this machine commit without any head row. A few round trips through `console serve` on the
same database first count what one round trip writes to the chain.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import anyio
from pydantic import SecretStr
from sqlalchemy import text

from benchmarks import procs
from benchmarks.agent import Agent
from benchmarks.config import Sizes
from benchmarks.setup import database, seed
from benchmarks.stats import table
from benchmarks.writers import Leg, measure, writers
from console.audit import Sequencer, session_info
from console.audit.checking import verify_database
from console.audit.signing import load_private_key, new_private_key_text
from console.audit.store import waiting_count
from console.config import Settings
from console.db import create_engine, is_sqlite, session_factory

TARGET_ROUND_TRIPS = 100  # B4's target on PostgreSQL, per second
MODES = ("wait", "audit", "plain")


async def _execute(url: str, sql: str) -> Any:
    """Run one statement in a transaction of its own; its first value, if it returns rows."""
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            result = await connection.execute(text(sql))
            return result.scalar() if result.returns_rows else None
    finally:
        await engine.dispose()


async def _chain_rows(url: str) -> tuple[int, int | None]:
    """Audit events so far and, on PostgreSQL, the transactions that wrote them (their rows' `xmin`)."""
    events = int(await _execute(url, "SELECT count(*) FROM audit_event"))
    if is_sqlite(url):
        return events, None
    return events, int(await _execute(url, "SELECT count(DISTINCT xmin::text) FROM audit_event"))


async def _round_trip_cost(url: str, work: Path, server_url: str, round_trips: int) -> dict[str, Any]:
    """What complete round trips through `console serve` add to the chain, per round trip."""
    token = await seed(url, {"bench": server_url})
    with procs.console(url, work) as console:
        agent = Agent(console.url, token)
        try:
            run_id = await agent.new_run("b7")
            call_id = (await agent.round_trip(run_id, "bench", "b7-warm")).call_id
            events, transactions = await _chain_rows(url)
            for index in range(round_trips):
                await agent.round_trip(run_id, "bench", f"b7-{index}")
            events_after, transactions_after = await _chain_rows(url)
        finally:
            await agent.aclose()
    per_transaction = None
    if transactions is not None and transactions_after is not None:
        per_transaction = (transactions_after - transactions) / round_trips
    return {
        "round_trips": round_trips,
        "events": (events_after - events) / round_trips,
        "transactions": per_transaction,
        "call_id": call_id,
    }


async def _verified(url: str, key: str) -> dict[str, Any]:
    """Chain what the writers left waiting, as a console's sequencer would, then verify the whole chain."""
    engine = create_engine(url)
    factory = session_factory(
        engine, info=session_info(Settings(database_url=url, audit_signing_key=SecretStr(key)))
    )
    try:
        async with factory() as session:
            waiting = await waiting_count(session=session)
        await Sequencer(factory).drain()
        async with factory() as session:
            report = await verify_database(session=session, public_key=load_private_key(key).public_key())
    finally:
        await engine.dispose()
    return {
        "ok": report.ok,
        "events": report.events,
        "checkpoints": report.checkpoints,
        "left_waiting": waiting,
        "lines": report.lines(),
    }


async def _one_database(kind: str, work: Path, sizes: Sizes, postgres_url: str) -> dict[str, Any]:
    key = new_private_key_text()
    async with database(kind, work, postgres_url) as url:
        key_type = "INTEGER" if is_sqlite(url) else "BIGSERIAL"
        await _execute(url, f"CREATE TABLE b7_plain (id {key_type} PRIMARY KEY, body TEXT NOT NULL)")
        with procs.mcp_server(work) as server:
            cost = await _round_trip_cost(url, work, server.url, sizes.b7_round_trips)
        legs: dict[tuple[int, str], list[Leg]] = {(n, mode): [] for n in sizes.b7_writers for mode in MODES}
        with writers(max(sizes.b7_writers), url, cost["call_id"], work, key) as started:
            for _ in range(sizes.b7_repetitions):  # alternating, so drift of the machine hits every leg
                for n, mode in legs:
                    leg = await anyio.to_thread.run_sync(measure, started[:n], mode, sizes.b7_seconds)
                    legs[n, mode].append(leg)
        verified = await _verified(url, key)
    return {"round_trip": cost, "legs": [_medians(n, legs) for n in sizes.b7_writers], "verified": verified}


def _medians(n: int, legs: dict[tuple[int, str], list[Leg]]) -> dict[str, Any]:
    out: dict[str, Any] = {"writers": n}
    for mode in MODES:
        out[f"{mode}_per_second"] = statistics.median(leg.per_second for leg in legs[n, mode])
    for mode in ("wait", "audit"):
        out[f"{mode}_held_ms"] = statistics.median(leg.held_per_commit for leg in legs[n, mode]) * 1000
        out[f"{mode}_busy"] = statistics.median(leg.busy for leg in legs[n, mode])
        out[f"{mode}_per_take"] = statistics.median(leg.per_take for leg in legs[n, mode])
    return out


def verdict(measured: dict[str, Any]) -> dict[str, Any]:
    """What B4's target asks of the head row, against what it passes in each design.

    Waiting for the head, each transaction that records events holds it through its commit, so those
    commits are serial: a hold of `held_ms` passes at most 1000 / `held_ms` of them a second, however
    many instances queue for it. The hold with one writer is the one no other writer slows down. Now a
    transaction that takes the head also chains what others left waiting, so the takes per event fall
    as writers are added (`per_take`).
    """
    cost = measured["round_trip"]
    per_round_trip = cost["transactions"] if cost["transactions"] is not None else cost["events"]
    needed = TARGET_ROUND_TRIPS * per_round_trip
    alone, most = measured["legs"][0], measured["legs"][-1]
    ceiling = 1000 / alone["wait_held_ms"] if alone["wait_held_ms"] else float("inf")
    return {
        "needed_per_second": needed,
        "writers": most["writers"],
        "ceiling_waiting": ceiling,
        "waiting_limits": ceiling < needed,
        "takes_per_second_now": most["audit_per_second"] / most["audit_per_take"]
        if most["audit_per_take"]
        else 0.0,
        "machine_limits": most["plain_per_second"] < needed,
    }


async def run(work: Path, sizes: Sizes, postgres_url: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for kind in kinds:
        measured = await _one_database(kind, work, sizes, postgres_url)
        result[kind] = {**measured, "target": verdict(measured)}
    return result


def render(result: dict[str, Any]) -> str:
    rows = [
        [
            kind,
            leg["writers"],
            f"{leg['wait_per_second']:.0f}",
            f"{leg['wait_held_ms']:.2f} / {leg['wait_busy']:.0%}",
            f"{leg['audit_per_second']:.0f}",
            f"{leg['audit_held_ms']:.2f} / {leg['audit_busy']:.0%} / {leg['audit_per_take']:.1f}",
            f"{leg['plain_per_second']:.0f}",
            f"{leg['audit_per_second'] / leg['wait_per_second']:.2f}",
            f"{leg['audit_per_second'] / measured['legs'][0]['audit_per_second']:.2f}",
        ]
        for kind, measured in result.items()
        for leg in measured["legs"]
    ]
    header = ["database", "writers", "waiting/s", "ms held / busy", "now/s", "ms held / busy / per take"]
    lines = [
        table(
            "B7 audit chain at scale: commits per second of writer processes, one audit event each "
            "(waiting: every commit waits for the head row, as before; now: events are left waiting when "
            "it is held; plain: one row, no shared lock; the head row's hold per commit, the share of the "
            "time it is held, and the events chained each time it is taken)",
            [*header, "plain/s", "now/waiting", "now vs 1 writer"],
            rows,
        )
    ]
    for kind, measured in result.items():
        lines.extend(_summary(kind, measured))
    return "\n".join(lines)


def _summary(kind: str, measured: dict[str, Any]) -> list[str]:
    cost, target, verified = measured["round_trip"], measured["target"], measured["verified"]
    alone, most = measured["legs"][0], measured["legs"][-1]
    through = "" if cost["transactions"] is None else f" in {cost['transactions']:.2f} transactions"
    state = "verified" if verified["ok"] else f"BROKEN: {verified['lines'][0]}"
    limits = "limits" if target["waiting_limits"] else "does not limit"
    machine = "fall short of" if target["machine_limits"] else "reach"
    return [
        f"{kind}: one round trip writes {cost['events']:.2f} audit events{through} (over "
        f"{cost['round_trips']} round trips); {TARGET_ROUND_TRIPS} round trips/s need "
        f"{target['needed_per_second']:.0f} such commits/s",
        f"{kind}: waiting for the head row, each holds it {alone['wait_held_ms']:.2f} ms with one writer: "
        f"together at most {target['ceiling_waiting']:.0f} commits/s, so the head row {limits} the target; "
        f"with {most['writers']} writers it is held {most['wait_busy']:.0%} of the time",
        f"{kind}: now, with {most['writers']} writers the head row is taken once per "
        f"{most['audit_per_take']:.1f} events ({target['takes_per_second_now']:.0f} times/s); "
        f"on this machine their plain commits ({most['plain_per_second']:.0f}/s) {machine} the target's rate",
        f"{kind}: chain after the run {state} ({verified['events']} events, "
        f"{verified['checkpoints']} signed checkpoints; {verified['left_waiting']} left waiting when the "
        "writers stopped, chained then)",
    ]
