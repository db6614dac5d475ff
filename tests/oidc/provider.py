"""A real OpenID Provider for tests: tests/oidc/provider.mjs (the npm package `oidc-provider`) as a process.

`install()` runs `npm ci` once into tests/oidc/node_modules (again only when package-lock.json changed).
Without Node.js the tests that need the provider skip, unless CONSOLE_REQUIRE_BROWSER=1 makes it a failure.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.npm import npm_ci
from tests.processes import read_lines

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "provider.mjs"
LOCK = HERE / "package-lock.json"
INSTALLED = HERE / "node_modules" / ".package-lock.json"
INSTALL_TIMEOUT = 300.0
START_TIMEOUT = 30.0
REPLY_TIMEOUT = 10.0
REQUIRE_ENV = "CONSOLE_REQUIRE_BROWSER"


def install() -> None:
    """`npm ci` unless node_modules already matches the lock file; skips without Node.js."""
    npm_ci(HERE, needed_for="to run the test OpenID provider", require_env=REQUIRE_ENV)


@dataclass
class OpenIdProvider:
    issuer: str
    process: subprocess.Popen[bytes]

    def configure(
        self,
        *,
        clients: list[dict[str, Any]] | None = None,
        accounts: Mapping[str, Mapping[str, Any] | None] | None = None,
        assertion_clients: dict[str, str] | None = None,
    ) -> None:
        """Send clients (first time only), accounts (added or replaced; None removes one) and the
        authorization servers it issues identity assertion grants for (issuer -> the client id there);
        wait, bounded, for `ready`."""
        message: dict[str, Any] = {
            "accounts": dict(accounts or {}),
            "assertion_clients": assertion_clients or {},
        }
        if clients is not None:
            message["clients"] = clients
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        replies = read_lines(self.process.stdout, REPLY_TIMEOUT)
        assert "ready" in replies, "the provider did not confirm its configuration in time"


@contextmanager
def openid_provider(stderr_path: Path) -> Iterator[OpenIdProvider]:
    """The provider on a free loopback port (each one its own issuer), until its stdin closes."""
    node = shutil.which("node")
    assert node is not None
    argv = [node, str(SCRIPT)]
    with stderr_path.open("ab") as stderr:
        process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=HERE
        )
        try:
            assert process.stdout is not None
            line = next(read_lines(process.stdout, START_TIMEOUT), "")
            assert line.startswith("listening on "), stderr_path.read_text()[-2000:]
            yield OpenIdProvider(line.removeprefix("listening on ").strip(), process)
        finally:
            for stream in (process.stdin, process.stdout):
                if stream is not None:
                    stream.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
