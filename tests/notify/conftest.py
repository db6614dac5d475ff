"""The processes notifications reach in these tests: an SMTP server (the demo's mailbox, aiosmtpd) and an
HTTP receiver (tests/servers/http_sink.py) that keeps every request it accepts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.notify.kept import Kept
from tests.notify.receivers import sink
from tests.processes import ServerProcess, start_http_server


@pytest.fixture(scope="session")
def smtp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """The SMTP server for the session (per xdist worker): it keeps no state but the messages it wrote,
    which each test reads from where the folder ended when it began (`mailbox`)."""
    folder = tmp_path_factory.mktemp("smtp")
    with start_http_server(
        [sys.executable, "-m", "console.demo.mailbox", str(folder / "mail")],
        {},
        folder / "smtp.txt",
        ("--port", "0"),
    ) as server:
        yield server, folder / "mail"


@pytest.fixture
def smtp(smtp_server: tuple[ServerProcess, Path]) -> ServerProcess:
    return smtp_server[0]


@pytest.fixture
def mailbox(smtp_server: tuple[ServerProcess, Path]) -> Kept:
    """What the SMTP server accepts from now on: this test's messages."""
    return Kept.from_now(smtp_server[1])


@pytest.fixture(scope="session")
def receiver_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, Path]]:
    """The HTTP receiver for the session (per xdist worker), refusing nothing; each test reads what it
    kept from where its folder ended when the test began (`inbox`)."""
    folder = tmp_path_factory.mktemp("receiver")
    with sink(folder, folder / "received") as process:
        yield process, folder / "received"


@pytest.fixture
def receiver(receiver_server: tuple[ServerProcess, Path]) -> ServerProcess:
    return receiver_server[0]


@pytest.fixture
def inbox(receiver_server: tuple[ServerProcess, Path]) -> Kept:
    """What the receiver accepts from now on: this test's requests."""
    return Kept.from_now(receiver_server[1])
