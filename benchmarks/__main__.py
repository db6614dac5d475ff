"""`python -m benchmarks`: run B1–B7 side by side on this machine, print the tables, write JSON.

python -m benchmarks                    # everything, full sizes (make bench)
python -m benchmarks --only B1,B2       # some of them
python -m benchmarks --quick            # tiny sizes: checks that the code still works, not a measurement
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import psutil
from sqlalchemy import create_engine, text

from benchmarks import b1_overhead, b2_latency, b3_inbox, b4_throughput, b5_holding, b6_gateway, b7_audit
from benchmarks.config import QUICK, Sizes

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "latest.json"
DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
ALL = ("B1", "B2", "B3", "B4", "B5", "B6", "B7")


def postgres_version(url: str) -> str:
    """The server's version string, so that a result says which PostgreSQL its legs ran on."""
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return str(connection.execute(text("SHOW server_version")).scalar_one())
    finally:
        engine.dispose()


def machine() -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
    }


async def run_all(
    which: Sequence[str], sizes: Sizes, work: Path, postgres_url: str, kinds: tuple[str, ...]
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in which:
        start = time.perf_counter()
        if name == "B1":
            results[name] = await b1_overhead.run(work, sizes, postgres_url, kinds)
            text = b1_overhead.render(results[name])
        elif name == "B2":
            results[name] = await b2_latency.run(work, sizes, postgres_url, kinds)
            text = b2_latency.render(results[name])
        elif name == "B3":
            results[name] = await b3_inbox.run(work, sizes, postgres_url, kinds)
            text = b3_inbox.render(results[name])
        elif name == "B4":
            results[name] = await b4_throughput.run(work, sizes, postgres_url, kinds)
            text = b4_throughput.render(results[name])
        elif name == "B5":
            results[name] = await b5_holding.run(work, sizes, postgres_url)
            text = b5_holding.render(results[name])
        elif name == "B6":
            results[name] = await b6_gateway.run(work, sizes, postgres_url)
            text = b6_gateway.render(results[name])
        else:
            results[name] = await b7_audit.run(work, sizes, postgres_url, kinds)
            text = b7_audit.render(results[name])
        print(f"{text}\n({name} took {time.perf_counter() - start:.0f} s)\n", flush=True)  # noqa: T201  # report
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Console benchmarks B1–B7.")
    parser.add_argument(
        "--only", default=",".join(ALL), help="comma-separated subset of B1,B2,B3,B4,B5,B6,B7"
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run, not a measurement)")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"JSON results (default {DEFAULT_OUT.name})"
    )
    parser.add_argument(
        "--postgres",
        default=os.environ.get("CONSOLE_TEST_POSTGRES_URL") or DEFAULT_POSTGRES,
        help="PostgreSQL server to create throwaway databases on",
    )
    parser.add_argument("--no-postgres", action="store_true", help="measure SQLite only")
    args = parser.parse_args(argv)
    which = [name.strip().upper() for name in args.only.split(",") if name.strip()]
    unknown = set(which) - set(ALL)
    if unknown:
        parser.error(f"unknown benchmark {', '.join(sorted(unknown))}")
    sizes = QUICK if args.quick else Sizes()
    kinds = ("sqlite",) if args.no_postgres else ("sqlite", "postgres")
    info = machine()
    if "postgres" in kinds:
        info["postgresql"] = postgres_version(args.postgres)
    print(f"machine: {info}\n", flush=True)  # noqa: T201  # report
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="console-bench-") as folder:
        results = anyio.run(run_all, which, sizes, Path(folder), args.postgres, kinds)
    # What else kept the machine busy: a shared machine's times drift, and this says how much it was shared.
    info["load_average"] = {"start": load_before, "end": os.getloadavg()[0]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"machine": info, "quick": args.quick, "results": results}, indent=2) + "\n"
    )
    print(f"results written to {args.out}")  # noqa: T201  # report
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
