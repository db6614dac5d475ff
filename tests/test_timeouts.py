"""No test can hang the run: each fails at its time limit (pytest-timeout, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FOREVER = """
import time

import pytest


@pytest.mark.timeout(2)
def test_forever() -> None:
    while True:
        time.sleep(0.05)
"""


def test_a_test_that_never_ends_fails_at_its_time_limit(tmp_path: Path) -> None:
    (tmp_path / "test_forever.py").write_text(FOREVER)
    done = subprocess.run(  # pytest itself, with this project's configuration
        [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path)]
        + ["-q", "-p", "no:cacheprovider", str(tmp_path / "test_forever.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed: Timeout (>2.0s) from pytest-timeout" in done.stdout, done.stdout
    assert "1 failed" in done.stdout, done.stdout


def test_every_test_has_a_time_limit_by_default(pytestconfig: pytest.Config) -> None:
    assert 60 <= float(pytestconfig.getini("timeout")) <= 600
