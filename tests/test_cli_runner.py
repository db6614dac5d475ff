"""tests/cli_runner.py runs `console` in the test's process as the process would run: what it is given and
what it changes is its own for the run only, and what escapes it fails the test."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path
from typing import NoReturn

import pytest

import console.cli.main
from tests.cli_runner import run_console
from tests.harness import SECRET_KEY


def test_the_command_sees_exactly_the_environment_and_directory_given_and_the_test_gets_its_own_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONSOLE_SECRET_KEY", SECRET_KEY)
    environment, directory = dict(os.environ), os.getcwd()
    env = {"CONSOLE_DATABASE_URL": "sqlite:///console.db"}  # relative: in the working directory
    assert run_console(["teams", "add", "platform"], env=env, cwd=tmp_path).returncode == 0
    assert (tmp_path / "console.db").is_file()
    remote = ("servers", "add", "remote", "--team", "platform", "--url", "https://mcp.example.com/mcp")
    no_key = run_console([*remote, "--header", "X-Api-Key=v"], env=env, cwd=tmp_path)
    assert no_key.returncode == 1  # the test's CONSOLE_SECRET_KEY was not the command's
    assert "set CONSOLE_SECRET_KEY to store header or environment values" in no_key.stderr
    assert (dict(os.environ), os.getcwd()) == (environment, directory)


def test_each_run_reads_its_settings_anew(tmp_path: Path) -> None:
    first = {"CONSOLE_DATABASE_URL": f"sqlite:///{tmp_path / 'first.db'}"}
    second = {"CONSOLE_DATABASE_URL": f"sqlite:///{tmp_path / 'second.db'}"}
    assert run_console(["teams", "add", "platform"], env=first).returncode == 0
    assert run_console(["teams", "list"], env=second).stdout == ""
    assert run_console(["teams", "list"], env=first).stdout == "platform\t0 members\n"


def test_the_commands_logging_is_its_own_and_the_tests_handlers_and_levels_come_back(tmp_path: Path) -> None:
    root = logging.getLogger()
    handlers = [(handler, handler.formatter) for handler in root.handlers]
    levels = (root.level, logging.getLogger("alembic").level)
    env = {"CONSOLE_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}", "CONSOLE_LOG_FORMAT": "json"}
    assert run_console(["migrate"], env=env).returncode == 0
    assert [(handler, handler.formatter) for handler in root.handlers] == handlers  # none made JSON
    assert (root.level, logging.getLogger("alembic").level) == levels


def test_exit_statuses_are_the_interpreters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"CONSOLE_DATABASE_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    unknown = run_console(["no-such-command"], env=env)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("usage: console ")

    def exits_with_a_message() -> NoReturn:
        raise SystemExit("stopped: one line")

    monkeypatch.setattr(console.cli.main, "load_settings", exits_with_a_message)
    stopped = run_console(["teams", "list"], env=env)
    assert (stopped.returncode, stopped.stdout, stopped.stderr) == (1, "", "stopped: one line\n")


def test_an_exception_the_command_lets_escape_fails_the_test(monkeypatch: pytest.MonkeyPatch) -> None:
    def breaks() -> NoReturn:
        raise RuntimeError("a bug in the command")

    monkeypatch.setattr(console.cli.main, "load_settings", breaks)
    with pytest.raises(RuntimeError, match="a bug in the command"):
        run_console(["teams", "list"], env={})


def test_the_command_reads_the_stdin_given(monkeypatch: pytest.MonkeyPatch) -> None:
    def echoes() -> NoReturn:
        print(sys.stdin.read().upper(), end="")  # noqa: T201  # what the command prints
        raise SystemExit(0)

    monkeypatch.setattr(console.cli.main, "load_settings", echoes)
    assert run_console(["teams", "list"], env={}, stdin="piped\n").stdout == "PIPED\n"


def test_a_command_that_does_not_end_fails_within_the_time_given(monkeypatch: pytest.MonkeyPatch) -> None:
    released = threading.Event()

    def hangs() -> NoReturn:
        released.wait(10)
        raise SystemExit(0)

    monkeypatch.setattr(console.cli.main, "load_settings", hangs)
    try:
        with pytest.raises(TimeoutError, match=r"`console teams list` did not end within 0\.2 s"):
            run_console(["teams", "list"], env={}, timeout=0.2)
    finally:
        released.set()
    for thread in threading.enumerate():
        if thread.name == "console teams list":
            thread.join(10)


def test_commands_that_serve_until_stopped_are_refused() -> None:
    for command in ("serve", "worker", "demo"):
        with pytest.raises(ValueError, match="run it as a process"):
            run_console([command], env={})
