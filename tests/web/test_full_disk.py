"""SQLite on a filesystem that fills up: a `console serve` process answers a write that finds no space
with 503 and `Retry-After`, keeps nothing of it, and serves writes again by itself once space returns.

The filesystem is a small tmpfs the test mounts itself (root only); CONSOLE_REQUIRE_TMPFS=1 (set by
.ci/run) makes a machine where mounting is not permitted fail the test instead of skipping it.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import httpx
import pytest

from tests.harness import TEAM, seed, signed_call, stdio_mrtr
from tests.processes import console_process, read_log
from tests.small_filesystem import fill, small_filesystem

pytestmark = pytest.mark.anyio

SIZE = "24m"  # room for the migrated database and its write-ahead log, little more
TIMEOUT = 30.0


async def test_a_write_on_a_full_disk_answers_503_keeps_nothing_and_the_console_recovers(
    sqlite_template: Path, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    with small_filesystem(tmp_path / "small", SIZE) as small:
        database = small / "console.db"
        shutil.copyfile(sqlite_template, database)
        url = f"sqlite+aiosqlite:///{database}"
        tokens = await seed(url, {"mrtr": stdio_mrtr(log)})
        agent = {"Authorization": f"Bearer {tokens['dev']}"}
        with console_process(url, tmp_path / "console.txt") as base:
            async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
                run = await http.post("/api/v1/runs", json={"team": TEAM, "title": "full"}, headers=agent)
                assert run.status_code == 201, run.text
                calls = f"/api/v1/runs/{run.json()['id']}/calls"
                with sqlite3.connect(database) as direct:  # an empty log: the next write needs new space
                    direct.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                filler = fill(small)
                refused = await http.post(
                    calls, params={"wait": 1}, json=signed_call("refused"), headers=agent
                )
                filler.unlink()
                served = await http.post(
                    calls, params={"wait": 20}, json=signed_call("served"), headers=agent
                )
        with sqlite3.connect(database) as direct:
            intact = direct.execute("PRAGMA integrity_check").fetchall()
            recorded = direct.execute("SELECT id FROM call WHERE run_id = ?", (run.json()["id"],)).fetchall()
    assert refused.status_code == 503, refused.text
    assert int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"]["code"] == "database_unavailable"
    assert "disk is full" in refused.json()["error"]["message"]
    assert served.status_code == 202, served.text
    assert served.json()["status"] == "awaiting_input"
    assert intact == [("ok",)]
    assert recorded == [(served.json()["id"],)]  # nothing of the refused call was kept, nor sent
    assert [r["arguments"] for r in read_log(log) if r["name"] == "signed"] == [{"item": "served"}]
