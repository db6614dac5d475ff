"""An HTTP receiver process for webhooks and callbacks (tests/servers/http_sink.py), what it got, and
channels that post to it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from console.mcp.sealed import Outbound
from console.notify.channels import add_channel
from console.transactions import transaction
from tests.harness import TEAM, Console
from tests.notify.kept import Kept
from tests.processes import start_http_server

REPO = Path(__file__).resolve().parents[2]
SINK = str(REPO / "tests" / "servers" / "http_sink.py")


def sink(tmp_path: Path, folder: Path, **env: str) -> Any:
    """An HTTP receiver keeping what it accepts in `folder` (HTTP_SINK_FAIL_FIRST=n: refusing n first)."""
    return start_http_server([sys.executable, SINK, str(folder)], env, tmp_path / "sink.txt", ("--port", "0"))


def posts(inbox: Kept) -> list[dict[str, Any]]:
    """What the receiver accepted since the test began, in arrival order, with lower-cased header names."""
    found = []
    for path in inbox.paths():
        kept = json.loads(path.read_text())
        kept["headers"] = {k.lower(): v for k, v in kept["headers"].items()}
        found.append(kept)
    return found


async def add(console: Console, kind: str, url: str, *, team: str = TEAM, **kw: Any) -> str | None:
    """An operator registers the team's channel (on this machine, so internal); its secret, for a
    webhook."""
    async with transaction(console.runtime.factory) as session:
        added = await add_channel(
            session=session,
            cipher=Outbound.of(console.runtime.settings).cipher,
            by=None,
            team_name=team,
            kind=kind,
            url=url,
            internal=True,
            **kw,
        )
    return added.secret
