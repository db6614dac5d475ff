"""The audit witness on a full disk: `/readyz` says it cannot be written while that lasts, and once it
can, the witness marks the events it missed, so a later restore knows it cannot name their calls."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.audit.witness import read_whole
from tests.harness import running_console, stdio_mrtr

pytestmark = pytest.mark.anyio

SMALL = "64k"
MOST_CALLS_TO_FILL_A_PAGE = 30  # a call chains a few events of about 150 bytes each; a page is 4 KiB


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of 64 KiB mounted for the test; skipped where this machine may not mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    mounter, unmounter = shutil.which("mount"), shutil.which("umount")
    if mounter is None or unmounter is None:
        pytest.skip("no mount command here to make a small filesystem with")
    done = subprocess.run(
        [mounter, "-t", "tmpfs", "-o", f"size={SMALL}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run([unmounter, str(mount)], check=True)


def _fill(folder: Path) -> Path:
    """A file that takes every block left on `folder`'s filesystem."""
    filler = folder / "filler"
    free = os.statvfs(folder)
    filler.write_bytes(b"\0" * (free.f_bavail * free.f_frsize))
    assert os.statvfs(folder).f_bavail == 0
    return filler


async def test_a_witness_on_a_full_disk_fails_readiness_and_marks_what_it_missed_once_it_writes_again(
    sqlite_url: str, small_filesystem: Path, tmp_path: Path
) -> None:
    witness = small_filesystem / "audit-witness.jsonl"
    servers = {"mrtr": stdio_mrtr(tmp_path / "requests.jsonl")}
    async with running_console(sqlite_url, servers, audit_witness_file=str(witness)) as console:
        await console.call("mrtr", "signed", {"item": "before"})
        assert (await console.client.get("/readyz")).status_code == 200
        written = read_whole(witness)
        assert written is not None
        assert written.last is not None
        last_before = written.last.seq

        filler = _fill(small_filesystem)
        # The witness's last page may still hold a few events' lines; the calls after those fail to write.
        for attempt in range(MOST_CALLS_TO_FILL_A_PAGE):
            await console.call("mrtr", "signed", {"item": f"while full {attempt}"})
            full = await console.client.get("/readyz")
            if full.status_code != 200:
                break
        assert full.status_code == 503
        assert "cannot write the audit witness" in full.json()["reason"]
        assert "No space left on device" in full.json()["reason"]

        filler.unlink()
        await console.call("mrtr", "signed", {"item": "after"})
        assert (await console.client.get("/readyz")).status_code == 200
    after = read_whole(witness)
    assert after is not None
    assert after.last is not None
    assert len(after.missed) == 1
    first_missed, last_missed = after.missed[0]
    assert last_before < first_missed <= last_missed < after.last.seq
    assert last_missed not in after.events  # the events the full disk kept out are named, not lost
