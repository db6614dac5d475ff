"""In-process wake-ups: the dispatcher learns of new work and long-polls learn of changed calls at once.

Other processes are covered by polling; these events only make the common single-process case instant.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from console.mcp.endpoint import LOG_LEVELS, LogSink, Progress


@dataclass(frozen=True)
class LogFollower:
    level: str  # the least severe level it wants
    sink: LogSink

    def wants(self, level: str) -> bool:
        return level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.level)


class Signals:
    def __init__(self) -> None:
        self._work = anyio.Event()
        self._any = anyio.Event()
        self._calls: dict[str, anyio.Event] = {}
        # What a change left for whoever took the marker it set (`call_changed(…, ended=…)`).
        self._left: weakref.WeakKeyDictionary[anyio.Event, Any] = weakref.WeakKeyDictionary()
        self._progress: dict[str, list[Progress]] = {}
        self._logs: dict[str, list[LogFollower]] = {}

    def work_available(self) -> None:
        self._work.set()
        self._work = anyio.Event()
        self.something_changed()

    def something_changed(self) -> None:
        """Wake everyone watching for any change (live inbox streams)."""
        self._any.set()
        self._any = anyio.Event()

    async def wait_for_change(self, max_wait: float) -> None:
        event = self._any
        with anyio.move_on_after(max_wait):
            await event.wait()

    def work_marker(self) -> anyio.Event:
        """Take this before looking for work; `wait_for_work(since=…)` then cannot miss a wake-up."""
        return self._work

    async def wait_for_work(self, max_wait: float, *, since: anyio.Event | None = None) -> None:
        """Wait for new work; with `since`, return at once if work arrived after the marker was taken."""
        event = since or self._work
        with anyio.move_on_after(max_wait):
            await event.wait()

    def call_changed(self, call_id: str, *, ended: Any = None) -> None:
        """Wake whoever waits on the call; `ended`: the call as it ended, for them to take instead of
        reading it again (`left_by`)."""
        self.something_changed()
        event = self._calls.pop(call_id, None)
        if event is not None:
            if ended is not None:
                self._left[event] = ended
            event.set()

    def left_by(self, marker: anyio.Event) -> Any:
        """What the change that set `marker` left for its waiters (None: read the call)."""
        return self._left.get(marker)

    def call_marker(self, call_id: str) -> anyio.Event:
        """Take this before reading a call's state; `wait_for_call(since=…)` then cannot miss its change."""
        return self._calls.setdefault(call_id, anyio.Event())

    async def wait_for_call(self, call_id: str, max_wait: float, *, since: anyio.Event | None = None) -> None:
        event = since or self._calls.setdefault(call_id, anyio.Event())
        with anyio.move_on_after(max_wait):
            await event.wait()
        self.drop_call_marker(call_id, event)

    def drop_call_marker(self, call_id: str, marker: anyio.Event) -> None:
        """Forget a marker nobody waits on (changes made by another process never reach this map)."""
        if not marker.is_set() and self._calls.get(call_id) is marker:
            del self._calls[call_id]

    def progress_of(self, call_id: str) -> Progress:
        """Where the server's progress notifications for the call go: to whoever in this process follows
        it (an agent's request held open at the gateway); nowhere when nobody does."""

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            for listener in list(self._progress.get(call_id, ())):
                await listener(progress, total, message)

        return relay

    def following_progress(self, call_id: str, listener: Progress) -> AbstractContextManager[None]:
        return _registered(self._progress, call_id, listener)

    def log_level_of(self, call_id: str) -> str | None:
        """The least severe log level anyone in this process wants for the call, if anyone does."""
        levels = [follower.level for follower in self._logs.get(call_id, ())]
        return min(levels, key=LOG_LEVELS.index) if levels else None

    def logs_of(self, call_id: str) -> LogSink:
        """Where the server's log notifications for the call go: to each follower wanting their level."""

        async def relay(level: str, data: Any, logger: str | None) -> None:
            for follower in list(self._logs.get(call_id, ())):
                if follower.wants(level):
                    await follower.sink(level, data, logger)

        return relay

    def following_logs(self, call_id: str, follower: LogFollower) -> AbstractContextManager[None]:
        return _registered(self._logs, call_id, follower)


T = TypeVar("T")


@contextmanager
def _registered(registry: dict[str, list[T]], call_id: str, item: T) -> Iterator[None]:
    """`item` is among the call's entries of `registry` while the block runs."""
    items = registry.setdefault(call_id, [])
    items.append(item)
    try:
        yield
    finally:
        items.remove(item)
        if not items:
            registry.pop(call_id, None)
