"""`console serve --workers N`: N console processes serve one listening socket, each with its own dispatcher.

This process binds the socket, starts the others on it (the kernel gives each new connection to whichever
accepts first), says `listening on …` once all of them serve, starts another when one dies, and stops them
all on SIGTERM or Ctrl+C. Each serving process ends when this one does, even when this one is killed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

from console.cli.common import say
from console.errors import ConsoleError

log = logging.getLogger(__name__)

READY_SECONDS = 120.0  # for every process to start serving, migrations checked and dispatcher started
STOP_SECONDS = 30.0  # for each to finish its requests after SIGTERM, before it is killed
RESTART_PAUSE_SECONDS = 1.0  # before starting another in place of one that died
PR_SET_PDEATHSIG = 1  # prctl(2)
METRICS_DIR = "PROMETHEUS_MULTIPROC_DIR"


@dataclass
class Serving:
    process: subprocess.Popen[bytes]
    ready: int  # the read end of the pipe it writes one byte to once it serves


def serve_in_processes(sock: socket.socket, count: int, serve_args: Sequence[str], url: str) -> int:
    """Serve `sock` from `count` processes running `console serve --socket-fd … serve_args` until stopped."""
    sock.listen(2048)  # connections queue from now on, while the processes start
    shared_metrics = METRICS_DIR not in os.environ
    if shared_metrics:  # counters and histograms of every process, summed at each scrape
        os.environ[METRICS_DIR] = tempfile.mkdtemp(prefix="console-metrics-")
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    previous = signal.set_wakeup_fd(wake_write)
    stop_signals = (signal.SIGTERM, signal.SIGINT)
    handlers = {number: signal.signal(number, _note) for number in (*stop_signals, signal.SIGCHLD)}
    children: list[Serving] = []
    try:
        children = [_start(sock, serve_args) for _ in range(count)]
        _wait_until_ready(children, wake_read)
        say(f"listening on {url}")
        say(f"served by {count} processes")
        _supervise(children, sock, serve_args, wake_read)
        return 0
    finally:
        _stop(children)
        signal.set_wakeup_fd(previous)
        for number, handler in handlers.items():
            signal.signal(number, handler)
        os.close(wake_read)
        os.close(wake_write)
        if shared_metrics:
            shutil.rmtree(os.environ.pop(METRICS_DIR), ignore_errors=True)


def _note(_signal: int, _frame: object) -> None:
    """The signal's number reaches the wake-up pipe (`signal.set_wakeup_fd`); nothing else to do here."""


def _start(sock: socket.socket, serve_args: Sequence[str]) -> Serving:
    ready_read, ready_write = os.pipe()
    command = [sys.executable, "-m", "console.cli", "serve", "--socket-fd", str(sock.fileno())]
    command += ["--ready-fd", str(ready_write), *serve_args]
    process = subprocess.Popen(  # noqa: S603  # this interpreter running this package
        command,
        pass_fds=(sock.fileno(), ready_write),
        start_new_session=True,  # Ctrl+C reaches this process alone, which stops the others in order
        preexec_fn=_end_with_parent,  # this process has no other threads
    )
    os.close(ready_write)
    return Serving(process, ready_read)


def _end_with_parent() -> None:
    # Linux only: elsewhere a serving process outlives a supervisor that was killed.
    name = ctypes.util.find_library("c")
    if name is not None and sys.platform.startswith("linux"):
        ctypes.CDLL(name, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _wait_until_ready(children: list[Serving], wake: int) -> None:
    waiting = {child.ready: child for child in children}
    deadline = time.monotonic() + READY_SECONDS
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ConsoleError(
                f"{len(waiting)} console processes did not start serving within {READY_SECONDS:.0f} s"
            )
        readable, _, _ = select.select([*waiting, wake], [], [], left)
        if wake in readable and _stop_asked(wake):
            raise KeyboardInterrupt
        for fd in readable:
            child = waiting.pop(fd, None)
            if child is not None and not os.read(fd, 1):  # the pipe closed without a byte: it ended
                code = child.process.wait()
                raise ConsoleError(f"a console process exited with code {code} before it served")


def _stop_asked(wake: int) -> bool:
    numbers = os.read(wake, 512)
    return any(number in (signal.SIGTERM, signal.SIGINT) for number in numbers)


def _supervise(children: list[Serving], sock: socket.socket, serve_args: Sequence[str], wake: int) -> None:
    """Until SIGTERM or SIGINT, start another process in place of each one that ends."""
    starting: dict[int, Serving] = {}
    while True:
        readable, _, _ = select.select([wake, *starting], [], [])
        for fd in readable:
            started = starting.pop(fd, None)
            if started is not None and os.read(fd, 1):
                log.info("console process %d serves", started.process.pid)
        if wake in readable and _stop_asked(wake):
            return
        for index, child in enumerate(children):
            code = child.process.poll()
            if code is None:
                continue
            starting.pop(child.ready, None)
            os.close(child.ready)
            log.warning("console process %d exited with code %d; starting another", child.process.pid, code)
            _mark_dead_for_metrics(child.process.pid)
            time.sleep(RESTART_PAUSE_SECONDS)  # a process that dies at once is not restarted in a tight loop
            children[index] = _start(sock, serve_args)
            starting[children[index].ready] = children[index]


def _mark_dead_for_metrics(pid: int) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, os.environ[METRICS_DIR])  # type: ignore[no-untyped-call]


def _stop(children: list[Serving]) -> None:
    for child in children:
        if child.process.poll() is None:
            child.process.terminate()
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        try:
            child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()
        os.close(child.ready)
