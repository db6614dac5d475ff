"""Starting MCP server and console processes for tests and reading back what they recorded."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any

from tests.harness import SECRET_KEY

# A console starts in about 2 s on an idle machine; a CI machine busy with browsers and other processes has
# taken more than 30 s once.
START_TIMEOUT = 60.0
# A worker process must start, find its work and reach a fault or settle a call: on a loaded two-core
# machine (the container image building beside it) that took longer than 30 s.
WORKER_WAIT = 60.0


@dataclass
class ServerProcess:
    url: str
    process: subprocess.Popen[bytes]
    env: dict[str, str]

    @property
    def log_path(self) -> Path | None:
        path = self.env.get("MRTR_LOG")
        return Path(path) if path else None


@contextmanager
def start_http_server(
    argv: list[str], env: dict[str, str], stderr_path: Path, listen_args: tuple[str, ...] = ("--http", "0")
) -> Iterator[ServerProcess]:
    """Run `argv` + `listen_args` (default `--http 0`); wait (bounded) for its `listening on URL` line."""
    full_env = {**os.environ, **env}
    with stderr_path.open("wb") as stderr:
        process = subprocess.Popen([*argv, *listen_args], stdout=subprocess.PIPE, stderr=stderr, env=full_env)
        try:
            assert process.stdout is not None
            url = _read_listening_line(process.stdout, stderr_path)
            yield ServerProcess(url, process, env)
        finally:
            if process.stdout is not None:
                process.stdout.close()
            stop_process(process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and SIGKILL when that did not end it within 10 s."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@contextmanager
def console_process(database_url: str, stderr_path: Path, **env: str) -> Iterator[str]:
    """`console serve --port 0` as its own process against `database_url`; yields its base URL.

    `env` adds or overrides environment variables (e.g. CONSOLE_SESSION_IDLE_MINUTES="1"). The dispatcher
    polls every 0.1 s and the harness's CONSOLE_SECRET_KEY is set unless `env` says otherwise. On exit the
    process is killed with SIGKILL (a crash, not a clean shutdown), which is what restart tests need and
    all that other tests need. Its stderr is appended to `stderr_path`, so one file can collect several
    runs. It serves from one process, which is the one a test kills.
    """
    full_env = {
        **os.environ,
        "CONSOLE_DATABASE_URL": database_url,
        "CONSOLE_DISPATCH_POLL_SECONDS": "0.1",
        "CONSOLE_SECRET_KEY": SECRET_KEY,  # what `seed` sealed the servers' values with
        "PYTHONFAULTHANDLER": "1",  # on SIGABRT it prints every thread's stack: where a hung start waits
        **env,
    }
    with stderr_path.open("ab") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "serve", "--port", "0", "--workers", "1"],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=full_env,
        )
        try:
            assert process.stdout is not None
            began = time.monotonic()
            line = next(read_lines(process.stdout, START_TIMEOUT), "")
            if not line and process.poll() is None:
                process.send_signal(signal.SIGABRT)
                with suppress(subprocess.TimeoutExpired):  # the failure below says what it printed so far
                    process.wait(timeout=30)
            assert line.startswith("listening on "), (
                f"console serve printed {line!r} after {time.monotonic() - began:.1f} s "
                f"(exit code {process.poll()}); its stderr ends: {stderr_path.read_text()[-2000:]!r}"
            )
            yield line.removeprefix("listening on ").strip()
        finally:
            if process.stdout is not None:
                process.stdout.close()
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)


def worker_process(database_url: str, output_path: Path, **env: str) -> subprocess.Popen[bytes]:
    """`console worker` as its own process against `database_url` with the harness's secret key; `env`
    adds or overrides variables. Its output goes to `output_path`; stopping it is the caller's."""
    full_env = {**os.environ, "CONSOLE_DATABASE_URL": database_url, "CONSOLE_SECRET_KEY": SECRET_KEY, **env}
    with output_path.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "console.cli", "worker"], env=full_env, stdout=output, stderr=output
        )


def _read_listening_line(stdout: IO[bytes], stderr_path: Path) -> str:
    for line in read_lines(stdout, START_TIMEOUT):
        if line.startswith("listening on "):
            return line.removeprefix("listening on ").strip()
    raise RuntimeError(f"server did not start: {stderr_path.read_text()[-2000:]}")


@dataclass
class Demo:
    """A running `console demo` and what its banner said; once stopped, what it printed while stopping."""

    process: subprocess.Popen[bytes]
    banner: list[str]  # every line up to "Press Ctrl+C to stop."
    url: str
    token: str
    passwords: dict[str, str]
    ending: list[str] = field(default_factory=list)


@contextmanager
def running_demo(
    program: list[str],
    cwd: Path,
    env: dict[str, str],
    *,
    timeout: float = 60,
    with_stderr: bool = False,
    ctrl_c: bool = True,
    options: tuple[str, ...] = (),
) -> Iterator[Demo]:
    """`<program> demo --port 0` in `cwd`; yields once the banner is printed, then stops it as Ctrl+C at
    a terminal does (SIGINT to its process group: the demo and the servers it started), or with
    `ctrl_c=False` as a process manager does (SIGTERM to the demo alone).

    `program` is how `console` is started (e.g. [python, "-m", "console.cli"]); `with_stderr` puts
    stderr into the banner as a terminal would show it (otherwise it is dropped).
    """
    process = subprocess.Popen(
        [*program, "demo", "--port", "0", *options],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if with_stderr else subprocess.DEVNULL,
        env=env,
        start_new_session=True,
    )
    demo: Demo | None = None
    try:
        assert process.stdout is not None
        banner: list[str] = []
        for line in read_lines(process.stdout, timeout):
            banner.append(line)
            if line.startswith("Press Ctrl+C"):
                break
        text = "\n".join(banner)
        assert banner[-1:] == ["Press Ctrl+C to stop."], text
        url = re.search(r"^listening on (\S+)$", text, flags=re.M)
        token = re.search(r"API token for dev's agent: (\S+)$", text, flags=re.M)
        assert url, text
        assert token, text
        passwords = dict(re.findall(r"^  user (\w+) +password (\S+)$", text, flags=re.M))
        demo = Demo(process, banner, url[1], token[1], passwords)
        yield demo
    finally:
        with suppress(ProcessLookupError):
            if ctrl_c:
                os.killpg(process.pid, signal.SIGINT)
            else:
                process.terminate()
        if process.stdout is not None:
            ending = list(read_lines(process.stdout, timeout))  # until every process let go of the pipe
            if demo is not None:
                demo.ending = ending
            process.stdout.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def read_lines(stream: IO[bytes], timeout: float) -> Iterator[str]:
    """Lines from a child's pipe as they come, giving up (silently) once `timeout` seconds have passed."""
    deadline = time.monotonic() + timeout
    buffer = b""
    while (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stream], [], [], remaining)
        if not ready:
            return
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            return
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        yield from (line.decode() for line in lines)


def read_log(path: Path) -> list[dict[str, Any]]:
    """Every request an MRTR test server recorded, oldest first."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def requests_with(log: Path, key: str, value: object) -> list[dict[str, Any]]:
    """The requests a test server logged whose arguments carry `key` = `value` (unique per test)."""
    return [r for r in read_log(log) if (r["arguments"] or {}).get(key) == value]


@dataclass
class Recorder:
    """A plain HTTP server that writes down the headers of every request it gets and answers 401."""

    url: str
    seen: list[dict[str, str]] = field(default_factory=list)

    def api_keys(self) -> list[str | None]:
        return [headers.get("x-api-key") for headers in self.seen]


@contextmanager
def recorder() -> Iterator[Recorder]:
    """A `Recorder` on a free loopback port, served from a thread until the block ends."""
    found: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the name http.server calls
            found.append({k.lower(): v for k, v in self.headers.items()})
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST  # likewise

        def log_message(self, format: str, *args: object) -> None:  # http.server's name
            pass

    with serving_in_thread(Handler) as base:
        yield Recorder(f"{base}/mcp", found)


@contextmanager
def serving_in_thread(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A plain HTTP server on a free loopback port, answering with `handler` from a thread until the block
    ends; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def serving_keys(keys: dict[str, Any]) -> Iterator[str]:
    """A plain HTTP server publishing `keys` as a console does (its /.well-known/jwks.json), served from a
    thread until the block ends; yields that URL."""
    body = json.dumps(keys).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # http.server's name
            pass

    with serving_in_thread(Keys) as base:
        yield f"{base}/.well-known/jwks.json"


def ended(process: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The process's exit status once it ended by itself within `timeout` seconds; None when it did not
    (it is killed then, so that no later test finds it running)."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
        return None
