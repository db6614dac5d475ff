"""Where the CPU goes while a benchmark runs: the CPU seconds of groups of processes (the console, the MCP
server, the agents, PostgreSQL) and how many of the machine's cores were busy, over one measured span."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psutil

Finder = Callable[[], list[psutil.Process]]


def trees(pids: list[int]) -> Finder:
    """The processes `pids` and their children (a `console serve --workers N` parent and its N servers)."""

    def find() -> list[psutil.Process]:
        found = []
        for pid in pids:
            try:
                root = psutil.Process(pid)
                found += [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
        return found

    return find


def this_process() -> list[psutil.Process]:
    return [psutil.Process(os.getpid())]


def postgres() -> list[psutil.Process]:
    """The PostgreSQL server's processes on this machine (its backends are named after it)."""
    found = []
    for process in psutil.process_iter(["name"]):
        if (process.info["name"] or "").startswith("postgres"):
            found.append(process)
    return found


def _seconds_by_pid(processes: list[psutil.Process]) -> dict[int, float]:
    seconds = {}
    for process in processes:
        try:
            spent = process.cpu_times()
        except psutil.Error:  # it ended meanwhile: only a parent in the group still counts what it spent
            continue
        # With what its children that ended spent (PostgreSQL's backends that closed, say): psutil can no
        # longer ask them, but their parent's count holds it.
        seconds[process.pid] = spent.user + spent.system + spent.children_user + spent.children_system
    return seconds


def _busy_seconds() -> float:
    spent = psutil.cpu_times()
    return float(sum(getattr(spent, f, 0.0) for f in ("user", "nice", "system", "irq", "softirq", "steal")))


@contextmanager
def measured(groups: dict[str, Finder]) -> Iterator[dict[str, Any]]:
    """Fills the yielded dict, when the block ends, with each group's CPU seconds over the block (processes
    that started during it count from zero), `busy_cores` (the machine's busy CPU time over the block's
    wall time, whoever spent it) and `cores`."""
    before = {name: _seconds_by_pid(find()) for name, find in groups.items()}
    busy, start = _busy_seconds(), time.perf_counter()
    spent: dict[str, Any] = {}
    yield spent
    elapsed = time.perf_counter() - start
    spent["busy_cores"] = (_busy_seconds() - busy) / elapsed
    spent["cores"] = psutil.cpu_count()
    for name, find in groups.items():
        after = _seconds_by_pid(find())
        spent[name] = sum(seconds - before[name].get(pid, 0.0) for pid, seconds in after.items())
