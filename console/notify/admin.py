"""What a team's admins see of its notifications: each delivery's state, and sending a failed one again."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.db import utcnow
from console.errors import Conflict, NotFound
from console.identity import Viewer
from console.identity.models import User
from console.identity.teams import actor_of, require_team_admin
from console.notify.models import Channel, Delivery
from console.notify.moves import move_delivery
from console.notify.states import DeliveryStatus

SHOWN = 200  # the newest deliveries a page lists


@dataclass(frozen=True)
class DeliveryRow:
    id: str
    event: str
    channel: str
    # The person's name (their address stays on their account), the channel's host, or for a callback
    # the agent's host.
    to: str
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None


async def team_deliveries(*, session: AsyncSession, by: Viewer | None, team_name: str) -> list[DeliveryRow]:
    """The team's newest deliveries, newest first.

    Raises:
        NotFound (team), Forbidden (not an admin of it).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    rows = (
        await session.execute(
            select(Delivery, User.name, Channel.host)
            .outerjoin(User, User.id == Delivery.user_id)
            .outerjoin(Channel, Channel.id == Delivery.recipient)
            .where(Delivery.team_id == team.id)
            .order_by(Delivery.created_at.desc(), Delivery.id)
            .limit(SHOWN)
        )
    ).all()
    return [
        DeliveryRow(
            d.id,
            d.event,
            d.channel,
            _to(d, name, host),
            d.status,
            d.attempts,
            d.last_error,
            d.created_at,
            d.sent_at,
        )
        for d, name, host in rows
    ]


def _to(delivery: Delivery, name: str | None, host: str | None) -> str:
    if delivery.channel == "callback":  # the agent's URL may carry its own secret: the host alone
        return f"{name or 'someone'}'s agent at {urlsplit(delivery.recipient).netloc}"
    return name or host or "—"


async def send_again(
    *, session: AsyncSession, by: Viewer | None, team_name: str, delivery_id: str, give_up_hours: float
) -> None:
    """Queue a failed delivery of the team once more, due now, with a fresh time to give up.

    Raises:
        NotFound (team, or no such delivery in it), Forbidden (not an admin), Conflict (not failed).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    delivery = await session.get(Delivery, delivery_id)
    if delivery is None or delivery.team_id != team.id:
        raise NotFound(f"no delivery {delivery_id!r} in {team_name}")
    if delivery.status != DeliveryStatus.FAILED:
        raise Conflict(f"only a failed delivery is sent again (this one is {delivery.status})")
    now = utcnow()
    move_delivery(delivery, DeliveryStatus.PENDING)
    delivery.not_before = now
    delivery.give_up_at = now + timedelta(hours=give_up_hours)
    record_event(
        session=session,
        actor=actor_of(by),
        action="notification_resent",
        subject_type="delivery",
        subject_id=delivery.id,
        team_id=team.id,
        payload={"event": delivery.event, "channel": delivery.channel, "user": delivery.user_id},
    )
