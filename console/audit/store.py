"""Reading the audit log: filtered pages, the chain in order, its head and checkpoints."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.actions import SITE_ONLY
from console.audit.models import AuditCheckpoint, AuditEvent, AuditHead, AuditPending

BATCH = 1000


@dataclass(frozen=True)
class AuditFilter:
    """Which events to show; `teams` limits what the viewer may see (None: everything, for site admins)."""

    teams: tuple[str, ...] | None = None
    team: str | None = None
    user: str | None = None
    server: str | None = None
    tool: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    call: str | None = None

    def narrowed(self, **changes: Any) -> AuditFilter:
        return replace(self, **changes)


def conditions(f: AuditFilter) -> list[ColumnElement[bool]]:
    where: list[ColumnElement[bool]] = []
    if f.teams is not None:  # not a site admin: the teams' events, of the actions teams may see
        where.append(AuditEvent.team_id.in_(f.teams))
        where.append(AuditEvent.action.not_in(SITE_ONLY))
    exact = {
        AuditEvent.team_id: f.team,
        AuditEvent.actor_id: f.user,
        AuditEvent.server: f.server,
        AuditEvent.tool: f.tool,
        AuditEvent.action: f.action,
        AuditEvent.outcome: f.outcome,
    }
    where.extend(column == value for column, value in exact.items() if value)
    if f.call:
        where.append(or_(AuditEvent.call_id == f.call, AuditEvent.subject_id == f.call))
    if f.since is not None:
        where.append(AuditEvent.at >= f.since)
    if f.until is not None:
        where.append(AuditEvent.at < f.until)
    return where


async def page(
    *, session: AsyncSession, f: AuditFilter, before: int | None, limit: int, after: int | None = None
) -> Sequence[AuditEvent]:
    """Up to `limit` matching events, newest first, with seq below `before` or, with `after`, the `limit`
    oldest above it (keyset pagination: the chain only grows, so an offset would shift under the reader)."""
    if after is not None:
        query = select(AuditEvent).where(*conditions(f), AuditEvent.seq > after)
        rows = (await session.execute(query.order_by(AuditEvent.seq).limit(limit))).scalars().all()
        return list(reversed(rows))
    query = select(AuditEvent).where(*conditions(f)).order_by(AuditEvent.seq.desc()).limit(limit)
    if before is not None:
        query = query.where(AuditEvent.seq < before)
    return (await session.execute(query)).scalars().all()


async def has_event(
    *, session: AsyncSession, f: AuditFilter, below: int | None = None, above: int | None = None
) -> bool:
    """Whether any matching event lies below `below` or above `above` (a page's Older and Newer links)."""
    query = select(AuditEvent.seq).where(*conditions(f))
    if below is not None:
        query = query.where(AuditEvent.seq < below)
    if above is not None:
        query = query.where(AuditEvent.seq > above)
    return (await session.execute(query.limit(1))).first() is not None


async def matching_seqs(*, session: AsyncSession, f: AuditFilter) -> list[int]:
    rows = await session.execute(select(AuditEvent.seq).where(*conditions(f)).order_by(AuditEvent.seq))
    return list(rows.scalars())


async def get_head(*, session: AsyncSession) -> AuditHead:
    query = select(AuditHead).where(AuditHead.id == 1).execution_options(populate_existing=True)
    return (await session.execute(query)).scalar_one()


async def chain_start(*, session: AsyncSession) -> int | None:
    """The first chained event's seq (older rows predate the chain)."""
    query = select(func.min(AuditEvent.seq)).where(AuditEvent.hash.is_not(None))
    found: int | None = (await session.execute(query)).scalar_one()
    return found


async def checkpoints(
    *, session: AsyncSession, start: int = 0, end: int | None = None
) -> list[AuditCheckpoint]:
    query = select(AuditCheckpoint).where(AuditCheckpoint.seq >= start).order_by(AuditCheckpoint.seq)
    if end is not None:
        query = query.where(AuditCheckpoint.seq <= end)
    return list((await session.execute(query)).scalars())


async def events_between(*, session: AsyncSession, start: int, end: int | None) -> AsyncIterator[AuditEvent]:
    """Every event from `start` to `end` (inclusive) in seq order, read in batches."""
    after = start - 1
    while True:
        query = select(AuditEvent).where(AuditEvent.seq > after).order_by(AuditEvent.seq).limit(BATCH)
        if end is not None:
            query = query.where(AuditEvent.seq <= end)
        rows = (await session.execute(query)).scalars().all()
        for row in rows:
            yield row
        if len(rows) < BATCH:
            return
        after = rows[-1].seq


async def waiting_count(*, session: AsyncSession) -> int:
    """How many recorded events are not chained yet (console/audit/chain.py)."""
    return int((await session.execute(select(func.count()).select_from(AuditPending))).scalar_one())
