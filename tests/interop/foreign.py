"""MCP clients and servers nobody here wrote, pinned, installed on first use into `.cache/`.

Python packages go into a virtual environment of their own per entry of `PYTHON_ENVS` (they pin `mcp`
versions that cannot share one environment); npm packages are those of `tests/interop/npm` (one lock
file), run with Node 22 (the MCP Inspector 2.x needs it). When an install fails the tests using it skip,
unless CONSOLE_REQUIRE_INTEROP=1 (CI) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from tests.cache_lock import cache_lock
from tests.conformance.suite import install_node
from tests.npm import npm_ci

REPO = Path(__file__).resolve().parents[2]
REQUIRE_ENV = "CONSOLE_REQUIRE_INTEROP"
INSTALL_TIMEOUT = 600.0
NPM_FOLDER = Path(__file__).resolve().parent / "npm"

# name -> pinned requirements; the name is the folder under .cache/ (prefixed "interop-").
PYTHON_ENVS: dict[str, tuple[str, ...]] = {
    "fastmcp-2": ("fastmcp==2.14.7",),
    "fastmcp-4": ("fastmcp==4.1.6",),
    "mcp-1.12": ("mcp==1.12.4", "pydantic==2.11.10"),  # mcp 1.12 imports a pydantic internal 2.12 removed
    "mcp-1.30": ("mcp==1.30.0",),
    "reference-servers": (
        "mcp-server-time==2026.10.19",
        "mcp-server-fetch==2026.10.24",
        "mcp-server-git==2026.10.19",
    ),
    # The last release of mcp-server-sqlite uses the mcp 1.x server API, gone in mcp 2.
    "mcp-server-sqlite": ("mcp-server-sqlite==2025.4.25", "mcp==1.30.0"),
}


def python_env(name: str) -> Path:
    """The `bin` folder of the cached environment `name` of PYTHON_ENVS (installed on first use)."""
    requirements = PYTHON_ENVS[name]
    folder = REPO / ".cache" / f"interop-{name}"
    done = folder / "installed"
    wanted = "\n".join(requirements) + "\n"
    if done.exists() and done.read_text() == wanted:
        return folder / "bin"
    with cache_lock(folder.name):
        if not (done.exists() and done.read_text() == wanted):
            _install(folder, requirements)
            done.write_text(wanted)
    return folder / "bin"


def _install(folder: Path, requirements: tuple[str, ...]) -> None:
    python = folder / "bin" / "python"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True, timeout=120)
        subprocess.run(  # fixed, pinned packages into our own cache folder
            [str(python), "-m", "pip", "install", "--quiet", *requirements],
            check=True,
            timeout=INSTALL_TIMEOUT,
            capture_output=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        output = (getattr(exc, "stderr", b"") or b"").decode(errors="replace")[-500:]
        _unavailable(f"cannot install {' '.join(requirements)} into .cache/{folder.name}: {exc} {output}")


@dataclass(frozen=True)
class NodeTools:
    """The npm packages of tests/interop/npm and the Node 22 that runs them."""

    node_bin: Path
    modules: Path

    @property
    def node(self) -> Path:
        return self.node_bin / "node"

    def bin(self, name: str) -> list[str]:
        """The command line that runs the package executable `name` (e.g. `mcp-inspector`) on Node 22."""
        return [str(self.node), str(self.modules / ".bin" / name)]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def node_tools() -> NodeTools:
    """Node 22 and the pinned npm packages (installed on first use)."""
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is needed for the interop tests' npm packages")
    npm_ci(NPM_FOLDER, needed_for="for the interop tests' npm packages", require_env=REQUIRE_ENV)
    return NodeTools(install_node(npm), NPM_FOLDER / "node_modules")


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires the interop tests")
    pytest.skip(reason)
