"""Running the demo's own servers beside `console demo`: the connect demo server (the "Example Tracker"),
Team notes (behind OAuth), and the mailbox its notification emails go to."""

from __future__ import annotations

import os
import secrets
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 30.0


@dataclass(frozen=True)
class Tracker:
    mcp_url: str
    tokens: Mapping[str, str]  # user name -> the bearer token that identifies them to the tracker


@contextmanager
def running_tracker(passwords: Mapping[str, str], *, port: int = 0, state_key: str = "") -> Iterator[Tracker]:
    """Start the tracker on loopback `port` (0: a free one); each user signs in there with their console
    password. The links and request states of its questions hold up while `port` and `state_key` do."""
    tokens = {name: f"trk-{secrets.token_urlsafe(24)}" for name in passwords}
    users = ",".join(f"{name}:{tokens[name]}:{password}" for name, password in passwords.items())
    env = {**os.environ, "CONNECT_STATE_KEY": state_key or secrets.token_urlsafe(32), "CONNECT_USERS": users}
    with _running("console.demo.connect", "--port", port, env=env) as url:
        yield Tracker(url, tokens)


@contextmanager
def running_notes(*, port: int = 0, state_file: Path | None = None) -> Iterator[str]:
    """Start Team notes (console/demo/notes.py) on loopback `port` (0: a free one), keeping what it issues
    in `state_file`; its MCP URL."""
    env = {**os.environ, "OAUTH_STATE_FILE": str(state_file)} if state_file is not None else None
    with _running("console.demo.notes", "--http", port, env=env) as url:
        yield url


@contextmanager
def running_mailbox(folder: Path) -> Iterator[str]:
    """Start the demo's mailbox (console/demo/mailbox.py) keeping messages in `folder`; its smtp:// URL."""
    with _running("console.demo.mailbox", "--port", 0, args=(str(folder),)) as url:
        yield url


@contextmanager
def _running(
    module: str, port_option: str, port: int, env: Mapping[str, str] | None = None, args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Our own server module, run with our own interpreter on `port`, until the block ends; its URL."""
    process = subprocess.Popen(  # noqa: S603  # our own module, with our own interpreter
        [sys.executable, "-m", module, *args, port_option, str(port)], stdout=subprocess.PIPE, env=env
    )
    try:
        yield _listening_url(process)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
    if process.stdout is not None:
        process.stdout.close()


def _listening_url(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None  # noqa: S101  # Popen was given stdout=PIPE
    deadline = time.monotonic() + START_SECONDS
    line = b""
    while (left := deadline - time.monotonic()) > 0 and not line.endswith(b"\n"):
        ready, _, _ = select.select([process.stdout], [], [], left)
        if not ready:
            break
        chunk = os.read(process.stdout.fileno(), 1024)
        if not chunk:
            break
        line += chunk
    text = line.decode().strip()
    if not text.startswith("listening on "):
        raise RuntimeError(f"a demo MCP server did not start: {text!r}")
    return text.removeprefix("listening on ")
