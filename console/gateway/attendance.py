"""Whether a 2025-11-25 agent is still there for the requests it left open.

A session is attended while one of its HTTP exchanges is open (a request's response stream, a resumed
one, its GET stream) and for a while after its last one began or ended. A held request whose own
exchange ended before its answer went out (the agent's connection closed, or the console closed the
stream for the client to resume it) is given up once its session stayed unattended that long: the
client neither resumed the stream with `Last-Event-ID` nor sent anything on the session.
"""

from __future__ import annotations

import math
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

EXCHANGE = "console_exchange"  # key of the request's state the handlers find their exchange under


class Attendance:
    """One session's open exchanges, and when the last one began or ended."""

    def __init__(self) -> None:
        self._open = 0
        self._since = time.monotonic()
        self._changes = 0  # exchanges begun and ended so far
        self._changed = anyio.Event()

    @contextmanager
    def exchange(self) -> Iterator[Exchange]:
        """An exchange of the session, open for the block."""
        exchange = Exchange(self)
        self._open += 1
        self._touch()
        try:
            yield exchange
        finally:
            self._open -= 1
            self._touch()
            exchange.left_at = self._changes
            exchange.ended.set()

    async def unattended_for(self, seconds: float) -> None:
        """Return once no exchange of the session was open, and none began, for `seconds`."""
        while True:
            changed = self._changed
            left = math.inf if self._open else self._since + seconds - time.monotonic()
            if left <= 0:
                return
            with anyio.move_on_after(left):
                await changed.wait()

    async def attended_after(self, change: int) -> None:
        """Return once an exchange of the session is open, or one began or ended after `change`."""
        while not self._open and self._changes <= change:
            await self._changed.wait()

    def _touch(self) -> None:
        self._since = time.monotonic()
        self._changes += 1
        changed, self._changed = self._changed, anyio.Event()
        changed.set()


@dataclass(eq=False)
class Exchange:
    """One HTTP request of a session and its response; `ended` once the response is over."""

    attendance: Attendance
    ended: anyio.Event = field(default_factory=anyio.Event)
    left_at: int = 0  # the session's count of changes when this exchange ended


class Attendances:
    """Each session's attendance, by the caller's token and the session id (another token's requests
    say nothing of this session), kept while an exchange is open or a held request watches it."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakValueDictionary[tuple[str, str], Attendance] = (
            weakref.WeakValueDictionary()
        )

    def of(self, token_id: str, session_id: str) -> Attendance:
        key = (token_id, session_id)
        found = self._sessions.get(key)
        if found is None:
            found = self._sessions[key] = Attendance()
        return found
