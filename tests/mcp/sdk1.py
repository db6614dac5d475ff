"""The mcp 1.x SDK (protocol 2025-11-25 only) in its own virtual environment, for older-generation servers.

`install()` creates `.cache/mcp-<version>` with the running interpreter's `venv` and pip-installs the
pinned SDK from the package index once; later runs reuse it. When that fails the tests using it skip,
unless CONSOLE_REQUIRE_LEGACY_SDK=1 (CI) makes that a failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cache_lock import cache_lock

REPO = Path(__file__).resolve().parents[2]
SDK_VERSION = "1.30.0"
SERVER = REPO / "tests/servers/sdk1_server.py"
REQUIRE_ENV = "CONSOLE_REQUIRE_LEGACY_SDK"
INSTALL_TIMEOUT = 600.0  # see the module timeout of tests/mcp/test_legacy_servers.py


def install() -> Path:
    """The interpreter of the cached mcp 1.x environment (installed on first use)."""
    folder = REPO / ".cache" / f"mcp-{SDK_VERSION}"
    python = folder / "bin" / "python"
    done = folder / "installed"
    if done.exists():
        return python
    with cache_lock(folder.name):
        if not done.exists():
            _install(folder, python)
            done.write_text(f"mcp=={SDK_VERSION}\n")
    return python


def _install(folder: Path, python: Path) -> None:
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, timeout=120)
        subprocess.run(  # a fixed, pinned package into our own cache folder
            [str(python), "-m", "pip", "install", "--quiet", f"mcp=={SDK_VERSION}"],
            check=True,
            timeout=INSTALL_TIMEOUT,
            capture_output=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        output = (getattr(exc, "stderr", b"") or b"").decode(errors="replace")[-500:]
        reason = f"cannot install mcp=={SDK_VERSION} into {folder}: {exc} {output}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires the 2025-11-25 server tests")
        pytest.skip(reason)
