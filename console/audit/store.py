"""Reading the audit log: filtered pages, the whole chain in order, and checking it in place."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import ColumnElement, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.models import GENESIS, AuditCheckpoint, AuditEvent, AuditHead
from console.audit.records import checkpoint_record, event_record
from console.audit.verify import ChainVerifier, Report

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
    if f.teams is not None:
        where.append(AuditEvent.team_id.in_(f.teams))
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
    *, session: AsyncSession, f: AuditFilter, before: int | None, limit: int
) -> Sequence[AuditEvent]:
    """Up to `limit` matching events, newest first, with seq below `before` (keyset pagination)."""
    query = select(AuditEvent).where(*conditions(f)).order_by(AuditEvent.seq.desc()).limit(limit)
    if before is not None:
        query = query.where(AuditEvent.seq < before)
    return (await session.execute(query)).scalars().all()


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


async def verify_database(*, session: AsyncSession, public_key: Ed25519PublicKey | None) -> Report:
    """Recompute the whole chain and check every checkpoint and the head row."""
    # The head first, and only what it vouches for: events and checkpoints commit together with the
    # head, so under READ COMMITTED rows written while this runs neither look missing nor unvouched for.
    head = await get_head(session=session)
    verifier = ChainVerifier(public_key, from_genesis=True)
    checkpoints_iter = iter(await checkpoints(session=session, end=head.seq))
    waiting = next(checkpoints_iter, None)
    async for row in events_between(session=session, start=0, end=head.seq):
        while waiting is not None and waiting.seq < row.seq:
            verifier.feed(checkpoint_record(waiting))
            waiting = next(checkpoints_iter, None)
        verifier.feed(event_record(row))
    while waiting is not None:
        verifier.feed(checkpoint_record(waiting))
        waiting = next(checkpoints_iter, None)
    report = verifier.finish()
    last = report.last_seq or 0
    if report.ok and head.seq > last:
        verifier.fail(last + 1, "truncated", f"the head row says the chain reaches seq {head.seq}")
    elif report.ok and head.hash != (report.head_hash or GENESIS):
        verifier.fail(head.seq, "edited", "the chain's last hash differs from the one in the head row")
    if report.ok and head.checkpoint_signature and head.checkpoint_signature != report.last_signature:
        verifier.fail(
            head.checkpoint_seq,
            "deleted",
            f"the head row names a signed checkpoint at seq {head.checkpoint_seq} that is missing",
        )
    if report.ok:
        await _check_nothing_beyond(session, verifier)
    return report


async def _check_nothing_beyond(session: AsyncSession, verifier: ChainVerifier) -> None:
    """Events past the head row were written outside the console (the head, read again, covers new ones)."""
    newest: int | None = (await session.execute(select(func.max(AuditEvent.seq)))).scalar_one()
    if newest is None:
        return
    head_seq: int = (await session.execute(select(AuditHead.seq).where(AuditHead.id == 1))).scalar_one()
    if newest > head_seq:
        verifier.fail(
            head_seq + 1, "edited", "events after the head row's seq were added outside the console"
        )
