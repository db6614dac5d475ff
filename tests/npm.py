"""npm packages that tests run with Node.js, pinned by a package-lock.json in their own folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cache_lock import cache_lock

INSTALL_TIMEOUT = 300.0


def npm_ci(folder: Path, *, needed_for: str, require_env: str) -> str:
    """`npm ci` in `folder` unless its node_modules already matches the lock file; the path of `node`.

    Without Node.js and npm the calling test skips, unless `require_env`=1 makes that a failure.
    """
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        reason = f"Node.js and npm are needed {needed_for}"
        if os.environ.get(require_env) == "1":
            pytest.fail(f"{reason}, and {require_env}=1 requires them")
        pytest.skip(reason)
    if _stale(folder):
        with cache_lock(f"npm-{folder.name}"):
            if _stale(folder):
                subprocess.run(  # a fixed command in our own directory
                    [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                    cwd=folder,
                    check=True,
                    timeout=INSTALL_TIMEOUT,
                    stdout=subprocess.DEVNULL,
                )
    return node


def _stale(folder: Path) -> bool:
    installed = folder / "node_modules" / ".package-lock.json"
    locked = (folder / "package-lock.json").stat().st_mtime
    return not installed.exists() or installed.stat().st_mtime < locked
