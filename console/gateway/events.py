"""What a 2025-11-25 agent may resume after its SSE stream broke: the messages of its own session, kept in
this process's memory and bounded, so a client that reconnects with `Last-Event-ID` hears what it missed.

Each session has a store of its own (`SessionEvents`), so a replay reads only that session's events by
construction: an event id is the session's own random start and a count, and an id of another session,
or one made up, replays nothing. The stores share one bound (`RecentEvents`).
A console restart forgets them; the calls themselves live in the database and `console__await` finds them.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from itertools import count

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

KEPT_EVENTS = 2_000  # the newest events across all sessions; older ones cannot be replayed
SESSION_KEPT = 500  # and of one session, so that one busy session does not push every other's out
RETRY_MS = 1_000  # how long a client waits before it reconnects (the SSE `retry:` field)


class RecentEvents:
    """The bound every session's store shares: past `kept` events in all, the oldest of any session go."""

    def __init__(self, kept: int = KEPT_EVENTS, per_session: int = SESSION_KEPT) -> None:
        self._kept = kept
        self._per_session = per_session
        self._order: OrderedDict[tuple[SessionEvents, EventId], None] = OrderedDict()

    def for_session(self) -> SessionEvents:
        """A new session's own store."""
        return SessionEvents(self, self._per_session)

    def __len__(self) -> int:
        return len(self._order)

    def added(self, store: SessionEvents, event_id: EventId) -> None:
        self._order[(store, event_id)] = None
        while len(self._order) > self._kept:
            (oldest, oldest_id), _ = self._order.popitem(last=False)
            oldest.forget(oldest_id)

    def forgotten(self, store: SessionEvents, event_id: EventId) -> None:
        self._order.pop((store, event_id), None)


class SessionEvents(EventStore):
    """One session's events, in the order they were stored."""

    def __init__(self, recent: RecentEvents, kept: int) -> None:
        self._recent = recent
        self._kept = kept
        self._start = secrets.token_hex(8)  # ids name this session's events only, and tell nothing else
        self._ids = count(1)
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = f"{self._start}.{next(self._ids)}"
        self._events[event_id] = (stream_id, message)
        self._recent.added(self, event_id)
        while len(self._events) > self._kept:
            oldest, _ = self._events.popitem(last=False)
            self._recent.forgotten(self, oldest)
        return event_id

    def forget(self, event_id: EventId) -> None:
        self._events.pop(event_id, None)

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        later = False
        for event_id, (stream, message) in list(self._events.items()):
            if later and stream == stream_id and message is not None:  # None: a priming event
                await send_callback(EventMessage(message, event_id))
            later = later or event_id == last_event_id
        return stream_id
