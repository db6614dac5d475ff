"""`console ARGS` run to its end inside the test's process, returning what `python -m console.cli ARGS`
would: its exit status, stdout and stderr. A new interpreter spends about 1.3 s importing the console
before it does anything; here the import is paid once per test process.

What a process has of its own is given for the run and taken back afterwards: the environment (the whole
of it, as `subprocess.run(env=...)` sets it), the working directory, stdin/stdout/stderr (real files, so
an MCP server the command starts writes its stderr where the command's goes), the root logger's handlers
and every logger's level. The command builds its settings from the environment and its engine from them
on each run and disposes of the engine before it returns; the `functools` caches in `console/` hold only
what their arguments determine (compiled statements, the migrations' head, a cipher per secret, the
page templates), so nothing one run set up reaches the next.

The command runs in a thread of its own, joined with a time limit, so that a command which does not end
fails the test instead of hanging it, and so that it can start its own event loop when the test is an
async one (the calling thread waits, as it would for a process).
"""

from __future__ import annotations

import io
import logging
import os
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from console.cli.main import main

TIMEOUT = 60.0
# Commands that serve until stopped: a test runs them as processes it can signal and kill.
LONG_RUNNING = frozenset({"serve", "worker", "demo"})


@dataclass
class _Ended:
    returncode: int | None = None
    escaped: BaseException | None = None


def run_console(
    args: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path | None = None,
    stdin: str = "",
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """`console ARGS` with exactly the environment `env`, in `cwd`, reading `stdin`.

    An exception the command lets escape is raised here, as the traceback the process would print; a
    `SystemExit` becomes the exit status the interpreter would give.

    Raises:
        ValueError: `args` name a command that serves until it is stopped.
        TimeoutError: the command did not end within `timeout` seconds.
    """
    argv = list(args)
    if argv and argv[0] in LONG_RUNNING and not {"-h", "--help"} & set(argv):
        raise ValueError(f"`console {argv[0]}` serves until stopped: run it as a process")
    ended = _Ended()
    with _process_state(env, cwd, stdin) as (stdout, stderr):
        thread = threading.Thread(target=_run, args=(argv, ended), name="console " + shlex.join(argv))
        thread.daemon = True  # a command that never ends must not keep pytest from exiting
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            raise TimeoutError(f"`console {shlex.join(argv)}` did not end within {timeout} s")
        said, complained = _read(stdout), _read(stderr)
    if ended.escaped is not None:
        raise ended.escaped
    assert ended.returncode is not None
    return subprocess.CompletedProcess(["console", *argv], ended.returncode, said, complained)


def _run(argv: list[str], ended: _Ended) -> None:
    try:
        ended.returncode = main(argv)
    except SystemExit as exc:
        ended.returncode = _exit_status(exc)
    except BaseException as exc:  # handed to the calling thread, which raises it
        ended.escaped = exc


def _exit_status(exc: SystemExit) -> int:
    """What the interpreter makes of `SystemExit(code)`: None is 0, a number itself, anything else is
    printed on stderr and is 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr, flush=True)  # noqa: T201  # as the interpreter prints it
    return 1


@contextmanager
def _process_state(env: Mapping[str, str], cwd: Path | None, stdin: str) -> Iterator[tuple[TextIO, TextIO]]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    stdout, stderr = _capture_file("strict"), _capture_file("backslashreplace")
    given = _capture_file("strict")
    given.write(stdin)
    given.flush()
    given.seek(0)
    try:
        os.environ.clear()
        os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = given, stdout, stderr
        with _own_logging():
            yield stdout, stderr
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for stream in (given, stdout, stderr):
            stream.close()


def _capture_file(errors: str) -> TextIO:
    return io.TextIOWrapper(tempfile.TemporaryFile(), encoding="utf-8", errors=errors, write_through=True)


def _read(stream: TextIO) -> str:
    """What was written, decoded as `subprocess.run(text=True)` does (universal newlines)."""
    stream.flush()
    stream.buffer.seek(0)
    return io.TextIOWrapper(io.BytesIO(stream.buffer.read()), encoding="utf-8").read()


@contextmanager
def _own_logging() -> Iterator[None]:
    """The root logger without the test's handlers (so `logging.basicConfig` in the command installs its
    own, on the captured stderr); afterwards the command's handlers removed and every level put back."""
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    levels = {name: logger.level for name, logger in _loggers().items()}
    for handler in saved_handlers:
        root.removeHandler(handler)
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
            handler.close()
        for handler in saved_handlers:
            root.addHandler(handler)
        for name, logger in _loggers().items():
            logger.setLevel(levels.get(name, logging.NOTSET))


def _loggers() -> dict[str, logging.Logger]:
    found = {"": logging.getLogger()}
    for name, logger in logging.Logger.manager.loggerDict.items():
        if isinstance(logger, logging.Logger):
            found[name] = logger
    return found
