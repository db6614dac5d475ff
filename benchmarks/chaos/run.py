"""One chaos run on a migrated PostgreSQL database: the processes, the load, the kills, then the checks."""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import anyio
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from benchmarks import procs
from benchmarks.chaos.api import Api
from benchmarks.chaos.checks import Kill, Report, check, held_jobs, read_requests
from benchmarks.chaos.cluster import Cluster, Member
from benchmarks.chaos.load import Load, Team, agent, approver
from benchmarks.chaos.plan import Plan
from benchmarks.chaos.proxy import RoundRobinProxy
from benchmarks.chaos.seed import agent_names, approver_names, seed
from console.audit.signing import new_private_key_text
from console.db import create_engine, session_factory


async def run_on(database_url: str, plan: Plan, work: Path) -> Report:
    """Run `plan` against `database_url` (migrated, empty), with its files in `work`; what it left."""
    rng = random.Random(plan.seed)  # noqa: S311  # reproducible choices of a test run, not secrets
    log = work / "requests.jsonl"
    log.touch()
    signing_key = new_private_key_text()
    env = {
        "CONSOLE_DATABASE_URL": database_url,
        "CONSOLE_ENV": "dev",
        "CONSOLE_SECRET_KEY": procs.SECRET_KEY,
        "CONSOLE_LEASE_SECONDS": str(plan.lease_seconds),
        "CONSOLE_DISPATCH_POLL_SECONDS": "0.2",
        "CONSOLE_AUDIT_SIGNING_KEY": signing_key,
    }
    agents, approvers = agent_names(plan.agents), approver_names(plan.approvers)
    engine = create_engine(database_url)
    factory = session_factory(engine)
    try:
        with procs.started(
            [sys.executable, "-m", "benchmarks.chaos.server", str(log)], work / "server.log"
        ) as server:
            tokens = await seed(database_url, server.url, agents, approvers)
            cluster = Cluster(env, work, plan.serves)
            load, kills = Load(), list[Kill]()
            try:
                await cluster.start()
                proxy = RoundRobinProxy(cluster.addresses())
                async with anyio.create_task_group() as tg:
                    base = f"http://127.0.0.1:{await tg.start(proxy.serve)}"
                    until = time.monotonic() + plan.seconds
                    tg.start_soon(_kill_every, cluster, proxy, plan, until, rng, factory, kills)
                    await _load(base, tokens, agents, approvers, plan, until, rng, load)
                    tg.cancel_scope.cancel()
            finally:
                await cluster.stop()
        report = Report(plan.seconds, kills, load)
        await check(report, factory, read_requests(log))
    finally:
        await engine.dispose()
    report.audit_ok, report.audit_lines = await audit_verify(env)
    return report


async def _kill_every(
    cluster: Cluster,
    proxy: RoundRobinProxy,
    plan: Plan,
    until: float,
    rng: random.Random,
    factory: async_sessionmaker[AsyncSession],
    kills: list[Kill],
) -> None:
    """SIGKILL a console process chosen at random every `plan.kill_every` seconds and start it again,
    on time whatever the restarts take (a process that is starting again is not chosen)."""
    restarting: set[str] = set()
    async with anyio.create_task_group() as tg:
        next_kill = time.monotonic() + plan.kill_every
        while next_kill < until:
            await anyio.sleep(max(0.0, next_kill - time.monotonic()))
            ready = [member for member in cluster.members if member.role not in restarting]
            if ready:
                victim = rng.choice(ready)
                restarting.add(victim.role)
                tg.start_soon(_kill_and_restart, cluster, proxy, factory, victim, kills, restarting)
            next_kill += plan.kill_every


async def _kill_and_restart(
    cluster: Cluster,
    proxy: RoundRobinProxy,
    factory: async_sessionmaker[AsyncSession],
    victim: Member,
    kills: list[Kill],
    restarting: set[str],
) -> None:
    with anyio.CancelScope(shield=True):  # never leave a process unaccounted for
        killed = await cluster.kill(victim)
        held = await held_jobs(factory, killed.pid, killed.connection_name)
        fresh = await cluster.restart(victim)
        kills.append(Kill(killed.role, killed.pid, killed.at, held, time.time()))
        if fresh.address is not None:
            proxy.replace(victim.address, fresh.address)
        restarting.discard(victim.role)


async def _load(
    base: str,
    tokens: dict[str, str],
    agents: list[str],
    approvers: list[str],
    plan: Plan,
    until: float,
    rng: random.Random,
    load: Load,
) -> None:
    """Agents until `until`, then until their last calls ended (at most `plan.drain_seconds` more);
    approvers answer until the agents are done."""
    clients = {name: Api(base, tokens[name], load.tally, _child(rng)) for name in tokens}
    stop = anyio.Event()
    team = Team(tuple(approvers))
    try:
        async with anyio.create_task_group() as answering:
            for name in approvers:
                answering.start_soon(approver, clients[name], name, team, stop, _child(rng), load)
            with anyio.move_on_after(until - time.monotonic() + plan.drain_seconds):
                async with anyio.create_task_group() as asking:
                    for name in agents:
                        asking.start_soon(agent, clients[name], name, until, _child(rng), load)
            stop.set()
    finally:
        for client in clients.values():
            await client.aclose()


def _child(rng: random.Random) -> random.Random:
    """A generator of its own for one agent or approver, drawn from the run's."""
    return random.Random(rng.random())  # noqa: S311  # likewise


async def audit_verify(env: dict[str, str]) -> tuple[bool, list[str]]:
    """`console audit verify` on the run's database, with its signing key: passed, and what it printed."""
    done = await anyio.run_process(
        [sys.executable, "-m", "console.cli", "audit", "verify"],
        env={**os.environ, **env},
        cwd=procs.REPO,
        check=False,
    )
    return done.returncode == 0, (done.stdout + done.stderr).decode(errors="replace").splitlines()
