"""The processes notifications reach in these tests: an SMTP server (the demo's mailbox, aiosmtpd) and an
HTTP receiver (tests/servers/http_sink.py) that keeps every request it accepts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.notify.receivers import sink
from tests.processes import ServerProcess, start_http_server


@pytest.fixture
def sink_folder(tmp_path: Path) -> Path:
    return tmp_path / "mail"


@pytest.fixture
def smtp(tmp_path: Path, sink_folder: Path) -> Iterator[ServerProcess]:
    with start_http_server(
        [sys.executable, "-m", "console.demo.mailbox", str(sink_folder)],
        {},
        tmp_path / "smtp.txt",
        ("--port", "0"),
    ) as mailbox:
        yield mailbox


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "received"


@pytest.fixture
def receiver(tmp_path: Path, inbox: Path) -> Iterator[ServerProcess]:
    with sink(tmp_path, inbox) as process:
        yield process
