"""The chaos test, shortened (`make chaos` runs it in full): console processes killed with SIGKILL under
load lose no call, decision or agent, and the audit chain stays whole. It asserts what must hold, never
how fast anything was."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.chaos.plan import Plan
from benchmarks.chaos.report import render
from benchmarks.chaos.run import run_on

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.postgres]

# Two serve processes and a worker, two kills; a short lease, so a dead process's work is taken over soon.
SMOKE = Plan(seconds=24, agents=8, approvers=3, serves=2, kill_every=8, lease_seconds=3, seed=7)


async def test_console_processes_killed_under_load_lose_no_call_decision_or_agent(
    postgres_url: str, tmp_path: Path
) -> None:
    report = await run_on(postgres_url, SMOKE, tmp_path)
    shown = render(report, SMOKE, "chaos smoke test")
    assert report.broken() == [], shown
    assert report.kills, shown
    assert report.load.answers, shown  # people decided while processes died
