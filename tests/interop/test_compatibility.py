"""docs/compatibility.md is the table tests/interop/compatibility.py renders, and no row names a test that
does not exist, so the table claims nothing no test checks."""

from __future__ import annotations

import subprocess
import sys

from tests.interop.compatibility import REPO, ROWS, render, written


def test_the_compatibility_table_in_the_docs_is_the_generated_one() -> None:
    assert written().read_text() == render(), (
        "run: python -m tests.interop.compatibility > docs/compatibility.md"
    )


def test_every_test_a_row_names_is_collected() -> None:
    files = sorted({test.split("::", 1)[0] for row in ROWS for test in row.tests})
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", *files],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    ids = set(collected.stdout.splitlines())
    assert [test for row in ROWS for test in row.tests if test not in ids] == []
    assert all(row.tests for row in ROWS)
