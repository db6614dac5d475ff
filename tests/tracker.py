"""The connect demo server (the "Example Tracker") as its own process, knowing dev and lead.

Each user has a bearer token that identifies them to the tracker (the per-user credential the console
must send on their calls) and a password for the tracker's own sign-in page. The tracker keeps its
connections in memory, so a fresh process knows nobody as connected.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.processes import ServerProcess, start_http_server

USERS = ("dev", "lead")


@dataclass(frozen=True)
class TrackerUser:
    token: str  # distinctive enough that finding its bytes anywhere means it leaked
    password: str


@dataclass(frozen=True)
class Tracker:
    process: ServerProcess
    users: dict[str, TrackerUser]

    @property
    def base(self) -> str:
        return self.process.url.removesuffix("/mcp")

    async def stats(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.get(f"{self.base}/stats")
        response.raise_for_status()
        stats: dict[str, Any] = response.json()
        return stats

    async def connect(self, link: str, who: str) -> httpx.Response:
        """What `who` does in their browser at the tracker: open the link, sign in there."""
        assert link.startswith(f"{self.base}/connect/start?"), link
        [flow] = parse_qs(urlsplit(link).query)["flow"]
        async with httpx.AsyncClient(timeout=10, follow_redirects=False) as client:
            form = await client.get(link)
            assert form.status_code == 200, form.text
            return await client.post(
                f"{self.base}/connect/start",
                data={"flow": flow, "username": who, "password": self.users[who].password},
            )


@contextmanager
def start_tracker(stderr_path: Path) -> Iterator[Tracker]:
    """A fresh tracker on a free loopback port, logging to `stderr_path`."""
    users = {
        name: TrackerUser(f"trk-{name}-{secrets.token_hex(16)}", f"tracker-{name}-{secrets.token_hex(4)}")
        for name in USERS
    }
    env = {
        "CONNECT_STATE_KEY": secrets.token_urlsafe(32),
        "CONNECT_USERS": ",".join(f"{n}:{u.token}:{u.password}" for n, u in users.items()),
    }
    with start_http_server(
        [sys.executable, "-m", "console.demo.connect"], env, stderr_path, listen_args=("--port", "0")
    ) as process:
        yield Tracker(process, users)
