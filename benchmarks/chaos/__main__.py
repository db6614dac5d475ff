"""`python -m benchmarks.chaos`: the chaos test (`make chaos`); exit status 1 if an invariant broke.

python -m benchmarks.chaos                       # 3 runs of 60 s: 3 serve + 1 worker, 32 agents, 8 approvers
python -m benchmarks.chaos --runs 1 --seconds 20 --agents 8
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import anyio

from benchmarks.__main__ import DEFAULT_POSTGRES, machine
from benchmarks.chaos.checks import Report
from benchmarks.chaos.plan import Plan
from benchmarks.chaos.report import render, summary
from benchmarks.chaos.run import run_on
from benchmarks.setup import database


async def _one(plan: Plan, work: Path, postgres_url: str) -> Report:
    async with database("postgres", work, postgres_url) as url:
        return await run_on(url, plan, work)


def main(argv: Sequence[str] | None = None) -> int:
    default = Plan()
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chaos", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="how many runs, one after another (default 3)")
    parser.add_argument("--seconds", type=float, default=default.seconds, help="load per run (default 60)")
    parser.add_argument("--agents", type=int, default=default.agents, help="default 32")
    parser.add_argument("--approvers", type=int, default=default.approvers, help="default 8")
    parser.add_argument("--serves", type=int, default=default.serves, help="serve processes (default 3)")
    parser.add_argument("--kill-every", type=float, default=default.kill_every, help="seconds (default 10)")
    parser.add_argument("--lease", type=int, default=default.lease_seconds, help="CONSOLE_LEASE_SECONDS (5)")
    parser.add_argument("--seed", type=int, help="of the random choices (default: a new one per run)")
    parser.add_argument(
        "--postgres",
        default=os.environ.get("CONSOLE_TEST_POSTGRES_URL") or DEFAULT_POSTGRES,
        help="PostgreSQL server to create a throwaway database on for each run",
    )
    parser.add_argument(
        "--work", type=Path, help="keep the processes' logs here (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    print(f"machine: {machine()}\n", flush=True)  # noqa: T201  # report
    reports: list[Report] = []
    plan = default
    for n in range(1, args.runs + 1):
        seed = args.seed + n - 1 if args.seed is not None else random.SystemRandom().randrange(2**31)
        plan = replace(
            default,
            seconds=args.seconds,
            agents=args.agents,
            approvers=args.approvers,
            serves=args.serves,
            kill_every=args.kill_every,
            lease_seconds=args.lease,
            seed=seed,
        )
        with tempfile.TemporaryDirectory(prefix="console-chaos-") as folder:
            work = args.work / f"run-{n}" if args.work is not None else Path(folder)
            work.mkdir(parents=True, exist_ok=True)
            report = anyio.run(_one, plan, work, args.postgres)
        reports.append(report)
        print(render(report, plan, f"Chaos run {n} of {args.runs} (seed {seed})") + "\n", flush=True)  # noqa: T201  # report
    print(summary(reports, plan), flush=True)  # noqa: T201  # report
    return 1 if any(r.broken() for r in reports) else 0


if __name__ == "__main__":
    raise SystemExit(main())
