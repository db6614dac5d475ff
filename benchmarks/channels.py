"""Three notification channels for a team, one of them down: B2 measures answering and resuming with
them against without (a failing channel must never slow a decision)."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from benchmarks import procs
from benchmarks.setup import TEAM
from console.db import create_engine, session_factory
from console.identity.credentials import CredentialCipher
from console.notify.channels import add_channel
from console.transactions import transaction

RECEIVER = str(procs.REPO / "tests" / "servers" / "http_sink.py")


@asynccontextmanager
async def three_channels(database_url: str, work: Path, secret_key: str) -> AsyncIterator[None]:
    """A Slack and a Teams channel at a real receiver, and a webhook at a port where nothing listens."""
    with procs.started(
        [sys.executable, RECEIVER, str(work / "received"), "--port", "0"], work / "receiver.log"
    ) as up:
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            down = f"http://127.0.0.1:{closed.getsockname()[1]}/hook"
        engine = create_engine(database_url)
        try:
            async with transaction(session_factory(engine)) as session:
                for kind, url in (
                    ("slack", f"{up.url}/slack"),
                    ("teams", f"{up.url}/teams"),
                    ("webhook", down),
                ):
                    await add_channel(
                        session=session,
                        cipher=CredentialCipher(secret_key),
                        by=None,
                        team_name=TEAM,
                        kind=kind,
                        url=url,
                        internal=True,  # on this machine
                    )
        finally:
            await engine.dispose()
        yield
