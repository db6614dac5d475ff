"""A small tmpfs a test mounts itself (root only), to fill its disk: skipped where this machine may not
mount one, unless CONSOLE_REQUIRE_TMPFS is set (.ci/run sets it), which makes that a failure."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_filesystem(where: Path, size: str) -> Iterator[Path]:
    """`where`, made and mounted as a tmpfs of `size` (`mount`'s syntax: 64k, 24m) for the block."""
    where.mkdir()
    mount, umount = shutil.which("mount") or "mount", shutil.which("umount") or "umount"
    try:
        mounted = subprocess.run(
            [mount, "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
            capture_output=True,
            text=True,
            check=False,
        )
        failure = mounted.stderr.strip() or f"exit code {mounted.returncode}"
    except OSError as exc:  # no mount command at all
        mounted, failure = None, str(exc)
    if mounted is None or mounted.returncode != 0:
        reason = f"cannot mount a tmpfs here: {failure}"
        if os.environ.get("CONSOLE_REQUIRE_TMPFS"):
            pytest.fail(f"{reason} (CONSOLE_REQUIRE_TMPFS is set)")
        pytest.skip(reason)
    try:
        yield where
    finally:
        subprocess.run([umount, "--lazy", str(where)], check=True)


def fill(filesystem: Path) -> Path:
    """A file that takes every free byte of `filesystem`."""
    filler = filesystem / "filler"
    for size in (65536, 4096, 512, 1):  # then the last pieces smaller than a chunk
        with filler.open("ab", buffering=0) as out:
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
    return filler
