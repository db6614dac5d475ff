"""What a 2025-11-25 agent may resume after its SSE stream broke: the messages of each stream, kept in this
process's memory and bounded, so a client that reconnects with `Last-Event-ID` hears what it missed.
A console restart forgets them; the calls themselves live in the database and `console__await` finds them.
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import count

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.types import JSONRPCMessage

KEPT_EVENTS = 2_000  # the newest events across all streams; older ones cannot be replayed
RETRY_MS = 1_000  # how long a client waits before it reconnects (the SSE `retry:` field)


class RecentEvents(EventStore):
    def __init__(self, kept: int = KEPT_EVENTS) -> None:
        self._kept = kept
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self._kept:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = int(last_event_id)
        for event_id, (stream, message) in list(self._events.items()):
            if stream == stream_id and int(event_id) > after and message is not None:  # None: a priming event
                await send_callback(EventMessage(message, event_id))
        return stream_id
