"""A team's chat and webhook channels: Slack-format incoming webhooks (also Mattermost and Rocket.Chat),
Microsoft Teams, and signed webhooks (the Standard Webhooks specification) for integrations.

A channel's URL must be https, and on a public address unless a site admin (or an operator) registers it
as internal (the same rule as a server's URL, checked again at each delivery): an internal channel, or a
URL on a loopback, link-local or private address, is refused to a team admin
(console/identity/host_settings.py). A webhook gets a `whsec_…` secret, shown once. Team channels are
for the whole team: a link or connect question, its owner's alone, never goes there.
"""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.errors import InvalidInput, NotFound
from console.identity import Viewer
from console.identity.credentials import CredentialCipher
from console.identity.host_settings import only_site_admin
from console.identity.teams import actor_of, require_team_admin
from console.mcp.addresses import url_refusal
from console.notify.models import Channel

KINDS = ("slack", "teams", "webhook")
# What a webhook may subscribe to (all of them unless it names some); chat channels get new questions.
EVENTS = ("question.created", "question.answered", "call.completed", "call.failed", "call.interrupted")
CHAT_EVENTS = ("question.created",)
MAX_URL = 2000


@dataclass(frozen=True)
class ChannelRow:
    id: str
    kind: str
    host: str
    events: list[str]
    internal: bool


@dataclass(frozen=True)
class Added:
    channel: ChannelRow
    secret: str | None  # a webhook's signing secret: shown this once


def url_binding(channel_id: str) -> str:
    return f"notify-channel:{channel_id}:url"


def secret_binding(channel_id: str) -> str:
    return f"notify-channel:{channel_id}:secret"


async def add_channel(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    by: Viewer | None,
    team_name: str,
    kind: str,
    url: str,
    events: list[str] | None = None,
    internal: bool = False,
) -> Added:
    """Register a channel for the team (`internal`: on a private address or plain http; only for site
    admins and operators, `by` None).

    Raises:
        NotFound (team), Forbidden (not its admin; to a team admin, an internal channel or one on a private
        address, recorded as `access_refused`), InvalidInput (the field that is wrong), SecretMissing.
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    if kind not in KINDS:
        raise InvalidInput("unknown channel", {"kind": f"one of {', '.join(KINDS)}"})
    wanted = events or list(EVENTS if kind == "webhook" else CHAT_EVENTS)
    if kind != "webhook" and events:
        raise InvalidInput("chat channels get new questions", {"events": "only for a webhook"})
    unknown = [e for e in wanted if e not in EVENTS]
    if unknown:
        raise InvalidInput(
            "unknown event", {"events": f"{', '.join(unknown)}: not one of {', '.join(EVENTS)}"}
        )
    team_id = team.id

    async def unless_site_admin(reason: str) -> None:
        await only_site_admin(
            session=session,
            by=by,
            team_id=team_id,
            attempt="add channel",
            subject_type="team",
            subject_id=team_id,
            reason=reason,
            kind=kind,
            host=(urlsplit(url.strip()).hostname or "")[:300],
        )

    if internal:
        await unless_site_admin("only a site admin can add an internal channel (on a private address)")
    problem = _scheme_problem(url.strip(), internal)
    if problem is None and not internal:
        address = await url_refusal(url.strip())
        if address is not None:
            await unless_site_admin(address)
            problem = address
    if problem is not None:
        raise InvalidInput("the channel's URL cannot be used", {"url": problem})
    channel = Channel(
        team_id=team.id,
        kind=kind,
        sealed_url="",
        host=urlsplit(url.strip()).netloc[:300],
        events_json=json.dumps(wanted),
        internal=internal,
    )
    session.add(channel)
    await session.flush()
    channel.sealed_url = cipher.seal_bound(url.strip(), url_binding(channel.id))
    secret = None
    if kind == "webhook":
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        channel.sealed_secret = cipher.seal_bound(secret, secret_binding(channel.id))
    record_event(
        session=session,
        actor=actor_of(by),
        action="channel_added",
        subject_type="channel",
        subject_id=channel.id,
        team_id=team.id,
        payload={"kind": kind, "host": channel.host, "events": wanted, "internal": internal},
    )
    return Added(_row(channel), secret)


async def team_channels(*, session: AsyncSession, by: Viewer | None, team_name: str) -> list[ChannelRow]:
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    rows = (
        (
            await session.execute(
                select(Channel).where(Channel.team_id == team.id).order_by(Channel.created_at)
            )
        )
        .scalars()
        .all()
    )
    return [_row(c) for c in rows]


async def remove_channel(
    *, session: AsyncSession, by: Viewer | None, team_name: str, channel_id: str
) -> None:
    """Remove the channel (its queued deliveries fail when they come due)."""
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    channel = await session.get(Channel, channel_id)
    if channel is None or channel.team_id != team.id:
        raise NotFound(f"no channel {channel_id!r} in {team_name}")
    await session.delete(channel)
    record_event(
        session=session,
        actor=actor_of(by),
        action="channel_removed",
        subject_type="channel",
        subject_id=channel_id,
        team_id=team.id,
        payload={"kind": channel.kind, "host": channel.host},
    )


async def channels_for(session: AsyncSession, team_id: str, event: str) -> list[Channel]:
    """The team's channels that want `event`."""
    rows = (await session.execute(_CHANNELS_OF_TEAM, {"team_id": team_id})).scalars().all()
    return [c for c in rows if event in json.loads(c.events_json)]


# Built once: it runs for every question asked and every notice sent.
_CHANNELS_OF_TEAM = select(Channel).where(Channel.team_id == bindparam("team_id"))


def _row(channel: Channel) -> ChannelRow:
    return ChannelRow(
        channel.id, channel.kind, channel.host, json.loads(channel.events_json), channel.internal
    )


async def url_problem(url: str, internal: bool) -> str | None:
    """Why `url` cannot receive notifications (a channel's, or an agent's callback URL), or None; an
    internal one may be http and on a private address."""
    return _scheme_problem(url, internal) or (None if internal else await url_refusal(url))


def _scheme_problem(url: str, internal: bool) -> str | None:
    parts = urlsplit(url)
    if len(url) > MAX_URL or not parts.hostname or parts.scheme not in ("https", "http"):
        return "an https URL"
    if parts.scheme != "https" and not internal:
        return "an https URL (plain http only on an internal address)"
    return None
