"""`console serve` and `console worker` say when PostgreSQL has fewer connections free than their processes
will hold (console/cli/connection_room.py), say nothing when it has room, and one line when it will not
say."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

import psycopg
import pytest

from console.cli.connection_room import warn_if_short_of_connections
from console.db import postgres_conninfo
from tests.harness import SECRET_KEY
from tests.harness import test_settings as settings_for
from tests.processes import read_lines

pytestmark = pytest.mark.postgres

BOUND = 60.0


def _said_while_starting(database_url: str, command: list[str], **settings: str) -> list[str]:
    """What the command printed on stderr until it was serving (its first line on stdout) and stopped."""
    env = {**os.environ, "CONSOLE_DATABASE_URL": database_url, "CONSOLE_SECRET_KEY": SECRET_KEY, **settings}
    process = subprocess.Popen(
        [sys.executable, "-m", "console.cli", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    try:
        first = next(read_lines(process.stdout, BOUND), "")
        assert first.startswith(("listening on ", "worker ")), first
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=BOUND)
        return list(read_lines(process.stderr, BOUND))  # to its end: every process that wrote is gone
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=BOUND)
        process.stdout.close()
        process.stderr.close()


def _max_connections(database_url: str) -> int:
    with psycopg.connect(postgres_conninfo(database_url)) as connection:
        row = connection.execute("SELECT current_setting('max_connections')::int").fetchone()
    assert row is not None
    return int(row[0])


def _warnings(lines: list[str]) -> list[str]:
    return [line for line in lines if "PostgreSQL connections" in line]


def test_serve_with_workers_warns_when_their_connections_exceed_what_postgres_has_free(
    postgres_url: str,
) -> None:
    most = _max_connections(postgres_url)  # one process's pool alone fills the server
    said = _said_while_starting(
        postgres_url, ["serve", "--port", "0", "--workers", "2"], CONSOLE_DATABASE_POOL_SIZE=str(most)
    )
    [warning] = _warnings(said)
    assert warning.startswith(
        f"warning: 2 console processes × {most + 2} PostgreSQL connections each "
        f"(CONSOLE_DATABASE_POOL_SIZE {most}, plus 2 for wake-ups) need {2 * (most + 2)}, "
        "but the server has "
    ), warning
    assert f"(max_connections {most}, " in warning
    assert warning.endswith("lower --workers or CONSOLE_DATABASE_POOL_SIZE, or raise max_connections")


def test_a_worker_warns_too(postgres_url: str) -> None:
    most = _max_connections(postgres_url)
    said = _said_while_starting(postgres_url, ["worker"], CONSOLE_DATABASE_POOL_SIZE=str(most))
    [warning] = _warnings(said)
    expected = f"warning: 1 console process × {most + 2} PostgreSQL connections each "
    assert warning.startswith(expected), warning


def test_processes_that_fit_start_without_a_warning(postgres_url: str) -> None:
    said = _said_while_starting(
        postgres_url, ["serve", "--port", "0", "--workers", "1"], CONSOLE_DATABASE_POOL_SIZE="1"
    )
    assert _warnings(said) == [], said


def test_a_server_that_cannot_be_asked_gets_one_warning_line_and_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as closed:  # bound, never listening: connecting is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        warn_if_short_of_connections(settings_for(f"postgresql+psycopg://console@127.0.0.1:{port}/none"), 2)
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith("warning: could not count PostgreSQL's free connections: "), said
