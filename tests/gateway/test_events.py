"""What a 2025-11-25 agent hears when it resumes a broken stream with Last-Event-ID: its own session's
later messages, and nothing of another session's."""

from __future__ import annotations

import pytest
from mcp.server.streamable_http import EventMessage
from mcp.types import JSONRPCNotification

from console.gateway.events import RecentEvents, SessionEvents

pytestmark = pytest.mark.anyio


def note(n: int) -> JSONRPCNotification:
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": n})


async def replayed(store: SessionEvents, after: str) -> list[int] | None:
    heard: list[EventMessage] = []

    async def send(event: EventMessage) -> None:
        heard.append(event)

    stream = await store.replay_events_after(after, send)
    if stream is None:
        return None
    return [event.message.params["progress"] for event in heard]  # type: ignore[union-attr,index]


async def test_a_resumed_stream_hears_only_its_own_later_messages() -> None:
    store = RecentEvents().for_session()
    priming = await store.store_event("a", None)
    first = await store.store_event("a", note(1))
    await store.store_event("b", note(100))
    await store.store_event("a", note(2))
    assert await replayed(store, priming) == [1, 2]  # the priming event itself carries nothing
    assert await replayed(store, first) == [2]
    assert await replayed(store, "no-such-event") is None


async def test_an_event_id_of_another_session_replays_nothing_though_the_stream_ids_match() -> None:
    recent = RecentEvents()
    mine, theirs = recent.for_session(), recent.for_session()
    await mine.store_event("1", note(1))
    their_first = await theirs.store_event("1", note(666))
    await theirs.store_event("1", note(667))
    assert await replayed(mine, their_first) is None
    assert await replayed(theirs, their_first) == [667]
    # The ids tell nothing of the other session: each has its own random start.
    assert their_first.split(".")[0] != (await mine.store_event("1", note(2))).split(".")[0]


async def test_only_the_newest_events_are_kept_across_sessions_and_of_each_session() -> None:
    recent = RecentEvents(kept=5, per_session=3)
    busy = recent.for_session()
    ids = [await busy.store_event("a", note(n)) for n in range(5)]
    assert await replayed(busy, ids[1]) is None  # past its own bound: the client starts afresh
    assert await replayed(busy, ids[2]) == [3, 4]
    quiet = recent.for_session()
    quiet_ids = [await quiet.store_event("b", note(n)) for n in (10, 11, 12)]
    assert len(recent) == 5  # the bound they share
    assert await replayed(busy, ids[2]) is None  # its oldest went to make room
    assert await replayed(quiet, quiet_ids[0]) == [11, 12]
