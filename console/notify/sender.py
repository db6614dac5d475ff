"""Sending the notification outbox. Each due delivery is claimed on its own (its `not_before` moves a lease
ahead, so another process skips it), sent, and marked sent; a failed attempt waits longer each time
(30 s, 1 min, 2 min, … at most an hour) until `give_up_at`, when it is failed and audited. A reminder
whose question was answered meanwhile is dropped. Sending runs
apart from answering and resuming: a channel that is down only delays its own messages.

`deliver_due(now=…)` does one pass at a given time (tests drive the clock with it); `Notifier` runs passes
whenever something changed, and at least every few seconds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM, record_event
from console.db import utcnow
from console.mcp.sealed import Outbound
from console.notify.failed import DeliveryFailed
from console.notify.hooks import post_to_channel
from console.notify.mail import Mailer
from console.notify.models import Channel, Delivery
from console.notify.questions import REMINDER
from console.notify.render import Message

BATCH = 50
LEASE = timedelta(minutes=2)  # a claimed delivery no other process takes meanwhile
FIRST_BACKOFF = timedelta(seconds=30)
MAX_BACKOFF = timedelta(hours=1)
POLL_SECONDS = 5.0


def backoff(attempts: int) -> timedelta:
    """How long to wait after the `attempts`-th failed attempt."""
    wait: timedelta = FIRST_BACKOFF * (2 ** max(0, attempts - 1))
    return min(wait, MAX_BACKOFF)


StillAsked = Callable[[AsyncSession, str], Awaitable[bool]]


@dataclass(frozen=True)
class Carriers:
    """What sending needs: the SMTP server (None: no email), the key that opens channels' URLs, and how
    to tell whether a question is still waiting (a reminder of an answered one is dropped)."""

    mailer: Mailer | None
    outbound: Outbound
    still_asked: StillAsked | None = None


async def deliver_due(*, factory: async_sessionmaker[AsyncSession], carriers: Carriers, now: datetime) -> int:
    """Send every delivery due at `now`; how many went out."""
    async with factory() as session:
        due = (
            (
                await session.execute(
                    select(Delivery.id)
                    .where(Delivery.status == "pending", Delivery.not_before <= now)
                    .order_by(Delivery.not_before)
                    .limit(BATCH)
                )
            )
            .scalars()
            .all()
        )
    sent = 0
    for delivery_id in due:
        async with factory() as session:
            claimed = await _claim(session, delivery_id, now)
            if claimed is None:
                continue
            if await _answered_before(session, carriers, claimed):
                claimed.status = "dropped"
                await session.commit()
                continue
            try:
                await _send(session, carriers, claimed, now)
            except DeliveryFailed as failed:
                _failed(session, claimed, str(failed), now, final=failed.final)
            else:
                claimed.status, claimed.sent_at, claimed.last_error = "sent", now, None
                sent += 1
            await session.commit()
    return sent


async def _claim(session: AsyncSession, delivery_id: str, now: datetime) -> Delivery | None:
    claimed = await session.execute(
        update(Delivery)
        .where(Delivery.id == delivery_id, Delivery.status == "pending", Delivery.not_before <= now)
        .values(not_before=now + LEASE, attempts=Delivery.attempts + 1)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]  # a CursorResult for an UPDATE
        await session.rollback()
        return None
    await session.commit()
    return await session.get(Delivery, delivery_id, populate_existing=True)


async def _answered_before(session: AsyncSession, carriers: Carriers, delivery: Delivery) -> bool:
    """Whether the delivery is a reminder of a question no longer waiting."""
    if delivery.event != REMINDER or carriers.still_asked is None:
        return False
    return not await carriers.still_asked(session, delivery.subject_id)


async def _send(session: AsyncSession, carriers: Carriers, delivery: Delivery, now: datetime) -> None:
    if delivery.channel != "email":
        channel = await session.get(Channel, delivery.recipient)
        outbound = carriers.outbound
        await post_to_channel(
            channel, delivery, cipher=outbound.cipher, allow_private=outbound.allow_private, now=now
        )
        return
    if carriers.mailer is None:
        raise DeliveryFailed("no SMTP server is set up (CONSOLE_SMTP_URL)")
    await carriers.mailer.send(delivery.recipient, Message(**json.loads(delivery.content_json)))


def _failed(session: AsyncSession, delivery: Delivery, reason: str, now: datetime, *, final: bool) -> None:
    delivery.last_error = reason
    if not final and now + backoff(delivery.attempts) < delivery.give_up_at:
        delivery.not_before = now + backoff(delivery.attempts)
        return
    delivery.status = "failed"
    record_event(
        session=session,
        actor=SYSTEM,
        action="notification_failed",
        subject_type="delivery",
        subject_id=delivery.id,
        team_id=delivery.team_id,
        payload={
            "event": delivery.event,
            "channel": delivery.channel,
            "user": delivery.user_id,
            "attempts": delivery.attempts,
            "error": reason[:300],
        },
    )


class Notifier:
    """Delivers the outbox until cancelled."""

    def __init__(
        self,
        *,
        factory: async_sessionmaker[AsyncSession],
        carriers: Carriers,
        wait_for_change: Callable[[float], Awaitable[None]],
        changed: Callable[[], None],
    ) -> None:
        self._factory = factory
        self._carriers = carriers
        self._wait = wait_for_change
        self._changed = changed

    async def run(self) -> None:
        while True:
            if await deliver_due(factory=self._factory, carriers=self._carriers, now=utcnow()):
                self._changed()
            await self._wait(POLL_SECONDS)
