"""The benchmarks still run end to end (tiny sizes); what they measure is reported, never asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import POSTGRES_ENV, REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # the run itself may take 600 s


def test_quick_benchmark_run_prints_every_table_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    postgres = os.environ.get(POSTGRES_ENV)
    argv = [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)]
    argv += ["--postgres", postgres] if postgres else ["--no-postgres"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    titles = (
        "B1 call overhead",
        "B2 answer-to-resume",
        "B3 scale of waiting",
        "B4 throughput",
        "B4 floor",
        "B4 where the CPU goes",
        "B5 ",
        "B6 gateway",
        "B7 audit chain",
    )
    for title in titles:
        assert title in done.stdout
    results = json.loads(out.read_text())["results"]
    assert results["B1"]["ratio"] > 0
    assert all(found["records_median_s"] > 0 for found in results["B1"]["databases"].values())
    assert results["B6"]["ratio"] > 0
    assert results["B6"]["floor_median_s"] > 0
    assert results["B6"]["proxy_median_s"] > 0
    assert results["B5"]["console"]["rss_waiting"] > 0
    assert all(m["errors"] == 0 for measured in results["B4"]["consoles"].values() for m in measured)
    assert all(f["errors"] == 0 and f["calls"] > 0 for f in results["B4"]["floors"])
    assert {f["leg"] for f in results["B4"]["floors"]} == {"floor", "records"}
    b4_legs = [
        *(m for ms in results["B4"]["consoles"].values() for m in ms),
        *results["B4"]["floors"],
    ]
    assert all(leg["cpu"]["serving"] > 0 and leg["cpu"]["busy_cores"] > 0 for leg in b4_legs)
    for measured in results["B7"].values():
        assert measured["verified"]["ok"], measured["verified"]["lines"]
        assert measured["round_trip"]["events"] > 0
        assert all(
            leg[f"{mode}_per_second"] > 0 for leg in measured["legs"] for mode in ("wait", "audit", "plain")
        )
