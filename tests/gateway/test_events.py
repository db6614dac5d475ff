"""What a 2025-11-25 agent hears when it resumes a broken stream with Last-Event-ID."""

from __future__ import annotations

import pytest
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification

from console.gateway.events import RecentEvents

pytestmark = pytest.mark.anyio


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})


async def replayed(store: RecentEvents, after: str) -> list[int] | None:
    heard: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        heard.append(event)

    stream = await store.replay_events_after(after, send)
    if stream is None:
        return None
    return [event.message.params["progress"] for event in heard]  # type: ignore[union-attr,index]


async def test_a_resumed_stream_hears_only_its_own_later_messages() -> None:
    store = RecentEvents()
    priming = await store.store_event("a", None)
    first = await store.store_event("a", note(1))
    await store.store_event("b", note(100))
    await store.store_event("a", note(2))
    assert await replayed(store, priming) == [1, 2]  # the priming event itself carries nothing
    assert await replayed(store, first) == [2]
    assert await replayed(store, "no-such-event") is None


async def test_only_the_newest_events_are_kept() -> None:
    store = RecentEvents(kept=3)
    ids = [await store.store_event("a", note(n)) for n in range(5)]
    assert await replayed(store, ids[0]) is None  # forgotten: the client starts afresh
    assert await replayed(store, ids[2]) == [3, 4]
