"""The audit witness on a full disk: `/readyz` says it cannot be written while that lasts, and once it
can, the witness marks the events it missed, so a restore to before them holds every unfinished call:
it cannot tell which of them moved."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from console.audit.witness import read_whole
from console.cli.backup import sqlite_database
from tests.harness import memory_mrtr, running_console
from tests.processes import read_log
from tests.small_filesystem import fill, small_filesystem

pytestmark = pytest.mark.anyio

SMALL = "64k"
MOST_CALLS_TO_FILL_A_PAGE = 30  # a call chains a few events of about 150 bytes each; a page is 4 KiB


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Path]:
    with small_filesystem(tmp_path / "small", SMALL) as mounted:
        yield mounted


async def test_a_full_disk_under_the_witness_fails_readiness_and_its_gap_holds_unfinished_calls_on_restore(
    sqlite_url: str, small: Path, tmp_path: Path
) -> None:
    witness, log = small / "audit-witness.jsonl", tmp_path / "requests.jsonl"
    servers = {"mrtr": memory_mrtr(log)}
    async with running_console(sqlite_url, servers, audit_witness_file=str(witness)) as console:
        waiting = await console.call("mrtr", "signed", {"item": "answered while full"})
        assert (await console.client.get("/readyz")).status_code == 200
        live, backup = sqlite_database(sqlite_url), tmp_path / "backup.db"
        assert live is not None
        _copy(live, backup)  # SQLite's online backup API, as `console backup` does

        filler = fill(small)
        # The witness's last page may still hold a few events' lines; the calls after those fail to write.
        for attempt in range(MOST_CALLS_TO_FILL_A_PAGE):
            await console.call("mrtr", "signed", {"item": f"while full {attempt}"})
            full = await console.client.get("/readyz")
            if full.status_code != 200:
                break
        assert full.status_code == 503
        assert "cannot write the audit witness" in full.json()["reason"]
        assert "No space left on device" in full.json()["reason"]
        assert str(small) not in full.text  # /readyz is anonymous: no place on the host
        done = await console.answer_and_settle(waiting, "accept", {"ok": True})
        assert done["status"] == "completed"

        filler.unlink()
        await console.call("mrtr", "signed", {"item": "after"})
        assert (await console.client.get("/readyz")).status_code == 200
        tokens = console.tokens
    after = read_whole(witness)
    assert after is not None
    assert after.last is not None
    assert len(after.missed) == 1
    assert after.missed[0][1] not in {
        line.seq for line in after.lines
    }  # kept out by the full disk, and named
    assert not [line for line in after.lines if line.call == waiting["id"] and "answer" in line.action]

    _copy(backup, live)  # the restore: the backup back in the database's place
    async with running_console(
        sqlite_url, servers, tokens=tokens, audit_witness_file=str(witness)
    ) as console:
        held = await console.get_call(waiting["id"])
        assert held["status"] == "interrupted"
        assert "after the backup this database was restored from" in held["error"]["message"]
    assert len(_sends_of(log, "answered while full")) == 2  # the call and its resume, once each


def _copy(source: Path, target: Path) -> None:
    with closing(sqlite3.connect(source)) as copied, closing(sqlite3.connect(target, timeout=30)) as into:
        copied.backup(into)


def _sends_of(log: Path, item: str) -> list[dict[str, object]]:
    return [r for r in read_log(log) if r["name"] == "signed" and r["arguments"] == {"item": item}]
