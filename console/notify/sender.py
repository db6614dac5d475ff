"""Sending the notification outbox. The due deliveries are claimed together (their `not_before` moves a
lease ahead, so another process skips them), sent side by side, and marked sent; a failed attempt waits
longer each time (30 s, 1 min, 2 min, … at most an hour) until `give_up_at`, when it is failed and
audited. Each attempt at an email reads its recipient again: it goes to the address they have now, and is
dropped once they turned email off, left the team or, for an email asking them to answer a question, may
no longer answer it; a reminder whose question was answered meanwhile is dropped too. Sending runs apart
from answering and resuming: a channel that is down only delays its own messages.

`deliver_due(now=…)` does one pass at a given time (tests drive the clock with it); `Notifier` runs passes
whenever something changed, and at least every few seconds.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import anyio
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM, record_event
from console.db import finds_any, utcnow
from console.identity.models import ApiToken, Membership, User
from console.mcp.sealed import Outbound
from console.metrics import NOTIFICATIONS_FAILED
from console.notify.failed import DeliveryFailed
from console.notify.hooks import CallbackTarget, ChannelClients, post
from console.notify.mail import Mailer
from console.notify.models import Channel, Delivery
from console.notify.moves import move_delivery
from console.notify.questions import ASKING, WHILE_PENDING
from console.notify.render import Message
from console.notify.states import DeliveryStatus
from console.transactions import transaction

BATCH = 50
LEASE = timedelta(minutes=2)  # a claimed delivery no other process takes meanwhile
FIRST_BACKOFF = timedelta(seconds=30)
MAX_BACKOFF = timedelta(hours=1)
POLL_SECONDS = 5.0
GATHER_SECONDS = 0.2


def backoff(attempts: int) -> timedelta:
    """How long to wait after the `attempts`-th failed attempt."""
    wait: timedelta = FIRST_BACKOFF * (2 ** max(0, attempts - 1))
    return min(wait, MAX_BACKOFF)


StillAsked = Callable[[AsyncSession, str], Awaitable[bool]]
Expand = Callable[[AsyncSession, datetime], Awaitable[int]]
MayAnswer = Callable[[AsyncSession, str, str], Awaitable[bool]]


@dataclass(frozen=True)
class Carriers:
    """What sending needs: the SMTP server (None: no email), the key that opens channels' URLs, how to
    tell whether a question is still waiting (a reminder of an answered one is dropped), how to turn
    the pending notices into deliveries (in the caller's transaction; how many it turned), and
    whether a person may answer a question now (an email asking them is dropped otherwise)."""

    mailer: Mailer | None
    outbound: Outbound
    still_asked: StillAsked | None = None
    expand: Expand | None = None
    may_answer: MayAnswer | None = None


Target = Channel | CallbackTarget | None


async def deliver_due(
    *,
    factory: async_sessionmaker[AsyncSession],
    carriers: Carriers,
    now: datetime,
    clients: ChannelClients | None = None,
) -> int:
    """Send every delivery due at `now` (posts on `clients`, else on clients made for this pass); how many
    went out."""
    if clients is None:
        own = ChannelClients()
        try:
            return await deliver_due(factory=factory, carriers=carriers, now=now, clients=own)
        finally:
            await own.aclose()
    if carriers.expand is not None:
        async with transaction(factory) as session:
            await carriers.expand(session, now)
    # One transaction claims the batch and one records how it went: the sends between touch no database,
    # so answering and resuming never wait on the notifier for a write.
    async with transaction(factory) as session:
        batch = await _claim_due(session, carriers, now)
    outcomes: dict[str, DeliveryFailed | None] = {}

    async def send(delivery: Delivery, target: Target) -> None:
        try:
            await _send(carriers, clients, delivery, target, now)
        except DeliveryFailed as failed:
            outcomes[delivery.id] = failed
        else:
            outcomes[delivery.id] = None

    async with anyio.create_task_group() as tasks:
        for delivery, target in batch:
            tasks.start_soon(send, delivery, target)
    if not outcomes:
        return 0
    async with transaction(factory) as session:
        for delivery_id, failed in outcomes.items():
            done = await session.get(Delivery, delivery_id)
            # Another process may have claimed it after our lease ran out, and recorded it first.
            if done is None or done.status != DeliveryStatus.PENDING:
                continue
            if failed is None:
                move_delivery(done, DeliveryStatus.SENT)
                done.sent_at, done.last_error = now, None
            else:
                _failed(session, done, str(failed), now, final=failed.final)
    return sum(1 for failed in outcomes.values() if failed is None)


async def _claim_due(
    session: AsyncSession, carriers: Carriers, now: datetime
) -> list[tuple[Delivery, Target]]:
    """The deliveries due at `now`, claimed (their `not_before` a lease ahead, one attempt more), each with
    its channel or callback token; reminders of questions answered meanwhile are dropped instead."""
    due_now = (Delivery.status == DeliveryStatus.PENDING) & (Delivery.not_before <= now)
    if not await finds_any(session, due_now):  # the common pass: one read, and on SQLite no write lock
        return []
    due = (
        (await session.execute(select(Delivery.id).where(due_now).order_by(Delivery.not_before).limit(BATCH)))
        .scalars()
        .all()
    )
    if not due:  # taken by another process meanwhile
        return []
    claim = (
        update(Delivery)
        .where(Delivery.id.in_(due), due_now)
        .values(not_before=now + LEASE, attempts=Delivery.attempts + 1)
        .returning(Delivery.id)
    )
    claimed_ids = (await session.execute(claim)).scalars().all()
    batch: list[tuple[Delivery, Target]] = []
    for delivery_id in claimed_ids:
        delivery = await session.get(Delivery, delivery_id, populate_existing=True)
        if delivery is None:
            continue
        if await _answered_before(session, carriers, delivery) or not await _still_for(
            session, carriers, delivery
        ):
            move_delivery(delivery, DeliveryStatus.DROPPED)
            continue
        batch.append((delivery, await _target(session, delivery)))
    return batch


async def _target(session: AsyncSession, delivery: Delivery) -> Target:
    if delivery.channel == "email":
        return None
    if delivery.channel == "callback":
        token_id = json.loads(delivery.content_json).get("token")
        token = await session.get(ApiToken, token_id) if token_id else None
        if token is None:
            return None
        return CallbackTarget(token.id, token.sealed_webhook_secret, live=token.revoked_at is None)
    return await session.get(Channel, delivery.recipient)


async def _still_for(session: AsyncSession, carriers: Carriers, delivery: Delivery) -> bool:
    """Whether an email still goes to its person — still a member of the team, with an address and email
    on, and for an email asking them to answer, still allowed to answer — set to their address now."""
    if delivery.channel != "email" or delivery.user_id is None:
        return True
    person = await session.get(User, delivery.user_id, populate_existing=True)
    if person is None or not person.email or not person.email_notifications:
        return False
    member = await session.execute(
        select(Membership.id).where(
            Membership.user_id == delivery.user_id, Membership.team_id == delivery.team_id
        )
    )
    if member.first() is None:
        return False
    may_answer = carriers.may_answer if delivery.event in ASKING else None
    if may_answer is not None and not await may_answer(session, delivery.subject_id, delivery.user_id):
        return False
    delivery.recipient = person.email
    return True


async def _answered_before(session: AsyncSession, carriers: Carriers, delivery: Delivery) -> bool:
    """Whether the delivery is a reminder or an escalation of a question no longer waiting."""
    if delivery.event not in WHILE_PENDING or carriers.still_asked is None:
        return False
    return not await carriers.still_asked(session, delivery.subject_id)


async def _send(
    carriers: Carriers, clients: ChannelClients, delivery: Delivery, target: Target, now: datetime
) -> None:
    if delivery.channel != "email":
        outbound = carriers.outbound
        await post(
            target,
            delivery,
            cipher=outbound.cipher,
            allow_private=outbound.allow_private,
            clients=clients,
            now=now,
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
    move_delivery(delivery, DeliveryStatus.FAILED)
    NOTIFICATIONS_FAILED.labels(delivery.channel).inc()
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
        clients = ChannelClients()
        try:
            while True:
                now = utcnow()
                if await deliver_due(
                    factory=self._factory, carriers=self._carriers, now=now, clients=clients
                ):
                    self._changed()
                await self._wait(POLL_SECONDS)
                # A change comes in a burst (an answer, then the resume, then the call's end): one pass a
                # moment later sends it all, after the requests that caused it have been served.
                await anyio.sleep(GATHER_SECONDS)
        finally:
            with anyio.CancelScope(shield=True):
                await clients.aclose()
