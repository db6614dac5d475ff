"""Checking the chain in the database: the whole of it, or only what came after the last check.

`verify_database` (what `console audit verify` runs) recomputes every event from the first. The audit
page runs `verify_new`, which starts where the previous check ended, as remembered in `audit_verified`
(the seq and hash of the last event it verified, and the last signed checkpoint before it), so a page
load reads only the events chained since. It still rereads the event the previous check ended at: a
rewrite of older events that recomputed the hashes after them changes that event's hash and shows. An
edit of an older event that leaves the hashes after it alone is found by `console audit verify`, as
is anything the checks before were blind to (their signatures, without a public key configured then).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.models import GENESIS, AuditCheckpoint, AuditEvent, AuditHead, AuditVerified
from console.audit.records import checkpoint_record, event_record, timestamp
from console.audit.store import checkpoints, events_between, get_head, waiting_count
from console.audit.verify import Anchor, ChainVerifier, Report
from console.db import utcnow

PAGE_LIMIT = 50_000  # most events one page load verifies; the rest on the next loads


async def verify_database(*, session: AsyncSession, public_key: Ed25519PublicKey | None) -> Report:
    """Recompute the whole chain and check every checkpoint and the head row."""
    report, _ = await _verify(session, public_key, after=None, limit=None)
    return report


@dataclass(frozen=True)
class ChainStatus:
    """What the audit page's badge says: this check, and where the check before it had ended."""

    report: Report
    earlier_seq: int  # events up to here were verified by earlier checks (0: none)
    earlier_at: datetime | None
    unchecked: int  # chained events past the report's last seq, left for the next check

    @property
    def checked_from(self) -> int:
        return self.earlier_seq + 1


async def verify_new(
    *, session: AsyncSession, public_key: Ed25519PublicKey | None, limit: int = PAGE_LIMIT
) -> ChainStatus:
    """Verify the events chained since the last check (up to `limit`) and remember how far the chain is
    verified now."""
    mark = (
        await session.execute(
            select(AuditVerified).where(AuditVerified.id == 1).execution_options(populate_existing=True)
        )
    ).scalar_one()
    after = Anchor(mark.seq, mark.hash, mark.checkpoint_seq, mark.checkpoint_signature) if mark.seq else None
    report, head_seq = await _verify(session, public_key, after=after, limit=limit)
    status = ChainStatus(report, mark.seq, mark.verified_at, max(0, head_seq - (report.last_seq or 0)))
    if report.ok and report.head_hash is not None and (report.last_seq or 0) > mark.seq:
        await session.execute(
            update(AuditVerified)
            .where(AuditVerified.id == 1, AuditVerified.seq < report.last_seq)
            .values(
                seq=report.last_seq,
                hash=report.head_hash,
                checkpoint_seq=report.signed_seq or 0,
                checkpoint_signature=report.last_signature or "",
                verified_at=utcnow(),
            )
        )
    return status


async def _verify(
    session: AsyncSession, public_key: Ed25519PublicKey | None, *, after: Anchor | None, limit: int | None
) -> tuple[Report, int]:
    """The report of the events after `after` (all: None), up to `limit` of them; and the head's seq."""
    # The head first, and only what it vouches for: events and checkpoints commit together with the
    # head, so under READ COMMITTED rows written while this runs neither look missing nor unvouched for.
    head = await get_head(session=session)
    verifier = ChainVerifier(public_key, from_genesis=True, after=after)
    start = after.seq + 1 if after is not None else 1
    end = head.seq if limit is None else min(head.seq, start + limit - 1)
    if after is None or await _still_there(session, verifier, after):
        await _feed(session, verifier, start, end)
    report = verifier.finish()
    report.waiting = await waiting_count(session=session)
    if report.signed_seq is not None and report.signed_at is None:  # signed before `after`
        signed = await session.get(AuditCheckpoint, report.signed_seq)
        report.signed_at = timestamp(signed.at) if signed is not None else None
    if report.ok and end == head.seq:
        await _check_head(session, verifier, head)
    return report, head.seq


async def _feed(session: AsyncSession, verifier: ChainVerifier, start: int, end: int) -> None:
    """Events and checkpoints from `start` to `end`, in order: each checkpoint after its event."""
    checkpoints_iter = iter(await checkpoints(session=session, start=start, end=end))
    waiting = next(checkpoints_iter, None)
    async for row in events_between(session=session, start=start, end=end):
        while waiting is not None and waiting.seq < row.seq:
            verifier.feed(checkpoint_record(waiting))
            waiting = next(checkpoints_iter, None)
        verifier.feed(event_record(row))
    while waiting is not None:
        verifier.feed(checkpoint_record(waiting))
        waiting = next(checkpoints_iter, None)


async def _still_there(session: AsyncSession, verifier: ChainVerifier, after: Anchor) -> bool:
    """Whether the event the last check ended at still has the hash it had then."""
    found = await session.execute(select(AuditEvent.hash).where(AuditEvent.seq == after.seq))
    stored = found.scalar_one_or_none()
    if stored == after.hash:
        return True
    what = "is missing" if stored is None else "has another hash"
    verifier.fail(after.seq, "rewritten", f"this event, verified before, {what} now")
    return False


async def _check_head(session: AsyncSession, verifier: ChainVerifier, head: AuditHead) -> None:
    report = verifier.report
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
