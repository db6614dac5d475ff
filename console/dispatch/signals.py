"""Wake-ups: the dispatcher learns of new work, and long-polls and live inboxes of changed calls, at once.

Within a process these are events. On PostgreSQL, `console/dispatch/wakeups.py` carries each wake-up to
the console's other processes too (`relay`) and hands theirs to `heard`; polling stays as the safety net
(and is all that crosses processes on SQLite).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from console.mcp.endpoint import LOG_LEVELS, LogSink, Progress

# The messages a wake-up is relayed as: new work, any change, or a change of one call (followed by its id).
WORK = "w"
ANY = "a"
CALL = "c:"


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
        # Where each wake-up is also told, for the other processes (None: this process is alone).
        self.relay: Callable[[str], None] | None = None
        self.stopping = False  # the process is stopping: waiters answer with what they have

    def stop_waiting(self) -> None:
        """The process is stopping: wake every waiter of this process, for it to answer as things stand."""
        self.stopping = True
        for call_id in list(self._calls):
            self._wake_call(call_id, None)

    def work_available(self) -> None:
        self._wake_work()
        self._tell(WORK)

    def something_changed(self) -> None:
        """Wake everyone watching for any change (live inbox streams, the notifier)."""
        self._wake_any()
        self._tell(ANY)

    @property
    def crosses_processes(self) -> bool:
        """Whether changes made in the other processes wake the waiters here too (then polling for them
        is only the safety net for a dropped connection)."""
        return self.relay is not None

    def heard(self, message: str) -> None:
        """A wake-up from another process (a message `relay` was given there): wake the waiters here."""
        if message == WORK:
            self._wake_work()
        elif message == ANY:
            self._wake_any()
        elif message.startswith(CALL):
            self._wake_call(message.removeprefix(CALL), None)

    def _tell(self, message: str) -> None:
        if self.relay is not None:
            self.relay(message)

    def _wake_work(self) -> None:
        self._work.set()
        self._work = anyio.Event()
        self._wake_any()

    def _wake_any(self) -> None:
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
        reading it again (`left_by`); it stays in this process."""
        self._wake_call(call_id, ended)
        self._tell(CALL + call_id)

    def _wake_call(self, call_id: str, ended: Any) -> None:
        self._wake_any()
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
        """Forget a marker nobody waits on (a change polled from the database never sets it)."""
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
