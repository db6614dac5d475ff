"""The audit page's questions: which events a viewer may see, one decision in full, and the chain status."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.actions import SITE_ONLY
from console.audit.checking import ChainStatus, verify_new
from console.audit.export import Format
from console.audit.extract import export_events
from console.audit.links import redact_payload
from console.audit.models import AuditEvent
from console.audit.service import record_event
from console.audit.signing import Signer
from console.audit.store import AuditFilter, has_event, page
from console.errors import Forbidden, NotFound
from console.identity.models import User
from console.identity.viewer import Viewer

REVIEW_ROLES = ("auditor", "admin")
DECISIONS = ("question_answered", "question_signed", "question_cosigned")


@dataclass(frozen=True)
class Criteria:
    """The audit page's filter as typed by a person: names, not ids."""

    team: str = ""
    user: str = ""
    server: str = ""
    tool: str = ""
    action: str = ""
    outcome: str = ""
    since: datetime | None = None
    until: datetime | None = None
    call: str = ""


@dataclass
class AuditPage:
    events: Sequence[AuditEvent]
    names: dict[str, str]  # user and team ids -> names
    next_before: int | None  # the Older link's cursor (None: this is the oldest page)
    newer_after: int | None  # the Newer link's cursor (None: this is the newest page)
    teams: list[tuple[str, str]]
    status: ChainStatus
    public_key: str | None


@dataclass
class DecisionView:
    """An event's payload as auditors see it (links cut down to origin and path), and for a decision what
    the approver was shown and what the console sent back, all from chained events."""

    payload: dict[str, Any] = field(default_factory=dict)
    started: dict[str, Any] | None = None
    question: dict[str, Any] | None = None
    sent: list[dict[str, Any]] = field(default_factory=list)
    outcome: dict[str, Any] | None = None


def visible_teams(viewer: Viewer) -> tuple[str, ...] | None:
    """Teams whose events the viewer may review (None: all, for site admins).

    Raises:
        Forbidden: an auditor or admin role in no team.
    """
    if viewer.site_admin:
        return None
    teams = tuple(team for team, role in viewer.roles.items() if role in REVIEW_ROLES)
    if not teams:
        raise Forbidden("the audit log is for auditors and admins")
    return teams


async def to_filter(*, session: AsyncSession, viewer: Viewer, criteria: Criteria) -> AuditFilter:
    teams = visible_teams(viewer)
    by_name = {name: team_id for team_id, name in viewer.team_names.items()}
    user_id = None
    if criteria.user:
        found = await session.execute(select(User.id).where(User.name == criteria.user))
        user_id = found.scalar_one_or_none() or "-"  # an unknown name matches nothing
    return AuditFilter(
        teams=teams,
        team=by_name.get(criteria.team, "-") if criteria.team else None,
        user=user_id,
        server=criteria.server or None,
        tool=criteria.tool or None,
        action=criteria.action or None,
        outcome=criteria.outcome or None,
        since=criteria.since,
        until=criteria.until,
        call=criteria.call or None,
    )


async def review(
    *,
    session: AsyncSession,
    viewer: Viewer,
    criteria: Criteria,
    before: int | None,
    limit: int,
    signer: Signer | None,
    after: int | None = None,
) -> AuditPage:
    """One page of the events the viewer may see, newest first (below `before`, or the page just above
    `after`), and the chain's status (the events chained since the last check are verified now,
    console/audit/checking.py)."""
    f = await to_filter(session=session, viewer=viewer, criteria=criteria)
    events = await page(session=session, f=f, before=before, after=after, limit=limit)
    older = bool(events) and await has_event(session=session, f=f, below=events[-1].seq)
    newer = bool(events) and await has_event(session=session, f=f, above=events[0].seq)
    status = await verify_new(session=session, public_key=signer.key.public_key() if signer else None)
    teams = sorted(
        ((tid, name) for tid, name in viewer.team_names.items() if f.teams is None or tid in f.teams),
        key=lambda pair: pair[1],
    )
    return AuditPage(
        events=events,
        names=await _names(session, viewer, events),
        next_before=events[-1].seq if older else None,
        newer_after=events[0].seq if newer else None,
        teams=teams,
        status=status,
        public_key=signer.public_text if signer else None,
    )


async def _names(session: AsyncSession, viewer: Viewer, events: Sequence[AuditEvent]) -> dict[str, str]:
    ids = {e.actor_id for e in events if e.actor_id}
    rows = await session.execute(select(User.id, User.name).where(User.id.in_(ids))) if ids else None
    names = dict(viewer.team_names)
    names.update({row.id: row.name for row in rows} if rows is not None else {})
    return names


async def event_detail(*, session: AsyncSession, viewer: Viewer, seq: int) -> tuple[AuditEvent, DecisionView]:
    """One event the viewer may see; for a decision, the question as shown and the resume sent.

    Raises:
        Forbidden: not an auditor or admin anywhere. NotFound: no such event, or not in the viewer's teams.
    """
    teams = visible_teams(viewer)
    event = await session.get(AuditEvent, seq)
    if event is None or (teams is not None and (event.team_id not in teams or event.action in SITE_ONLY)):
        raise NotFound(f"no audit event {seq}")
    view = DecisionView(payload=shown_payload(event))
    if event.call_id is None or event.action not in DECISIONS:
        return event, view
    related = (
        await session.execute(
            select(AuditEvent).where(AuditEvent.call_id == event.call_id).order_by(AuditEvent.seq)
        )
    ).scalars()
    key = view.payload.get("key")
    for other in related:
        payload = shown_payload(other)
        if other.action == "call_started":
            view.started = payload
        elif other.action == "round_received" and other.seq < event.seq:
            requests = payload.get("input_requests") or {}
            if isinstance(requests, dict) and key in requests:
                view.question = {"key": key, "round": payload.get("round"), "request": requests[key]}
        elif other.action == "request_sent" and other.seq > event.seq and not view.sent:
            view.sent.append({"seq": other.seq, **payload})
        elif other.action in ("call_completed", "call_failed") and other.seq > event.seq and not view.outcome:
            view.outcome = {"seq": other.seq, "action": other.action, **payload}
    return event, view


def shown_payload(event: AuditEvent) -> dict[str, Any]:
    """The payload without the whole links that versions before links were redacted recorded."""
    payload: dict[str, Any] = json.loads(event.payload_json)
    return redact_payload(event.action, payload) or payload


async def export_for(
    *, session: AsyncSession, viewer: Viewer, criteria: Criteria, fmt: Format, signer: Signer | None
) -> bytes:
    """The viewer's current filter as a verifiable export; the download itself is recorded.

    Raises:
        Forbidden: not an auditor or admin anywhere.
    """
    f = await to_filter(session=session, viewer=viewer, criteria=criteria)
    data = await export_events(session=session, f=f, fmt=fmt, signer=signer)
    record_event(
        session=session,
        actor=viewer.actor,
        action="audit_exported",
        subject_type="audit",
        subject_id=fmt,
        payload={"format": fmt, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()},
    )
    return data
