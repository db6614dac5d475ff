"""Team notes with test knobs (tests/servers/oauth_server.py) as processes the tests of a session share.

A process takes several seconds to start, and nothing a test checks depends on it being new: every test's
console has a fresh database, so it registers its own client and gets its own grants. What a test reads
back is the server's token log, and each test reads it from where the log ended when the test began.
"""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.processes import start_http_server

REPO = Path(__file__).resolve().parents[2]
OAUTH_SERVER = str(REPO / "tests" / "servers" / "oauth_server.py")


@dataclass(frozen=True)
class OAuthLog:
    """The token events a Team notes process appended to its OAUTH_LOG since byte `start`."""

    path: Path
    start: int = 0

    @classmethod
    def from_now(cls, path: Path) -> OAuthLog:
        """The events logged from now on: what the test that asks sees, and not the earlier tests'."""
        return cls(path, path.stat().st_size if path.exists() else 0)

    def events(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as log:
            log.seek(self.start)
            return [json.loads(line) for line in log.read().splitlines() if line.strip()]


@dataclass(frozen=True)
class Notes:
    """A running Team notes: its MCP endpoint, and its token log as the test that got it sees it."""

    url: str
    log: OAuthLog

    def events(self) -> list[dict[str, Any]]:
        return self.log.events()


class NotesServers:
    """One Team notes process per set of knobs (its environment), started when first asked for and kept
    until `stack` closes."""

    def __init__(self, folder: Path, stack: ExitStack) -> None:
        self._folder = folder
        self._stack = stack
        self._running: dict[tuple[tuple[str, str], ...], tuple[str, Path]] = {}

    def __call__(self, **env: str) -> Notes:
        knobs = tuple(sorted(env.items()))
        if knobs not in self._running:
            number = len(self._running)
            log = self._folder / f"oauth-log-{number}.jsonl"
            server = self._stack.enter_context(
                start_http_server(
                    [sys.executable, OAUTH_SERVER],
                    {"OAUTH_LOG": str(log), **env},
                    self._folder / f"oauth-stderr-{number}.txt",
                )
            )
            self._running[knobs] = (server.url, log)
        url, log = self._running[knobs]
        return Notes(url, OAuthLog.from_now(log))
