"""Comparing the database's chain with its witness (console/audit/witness.py), to find a restore.

`witness_problem` is the quick check `/readyz` and `console audit verify` run: the witness's newest
event must be in the database with the same hash. `since_backup` reads the whole witness to find the
last event the restored database shares with it, and what the witness recorded after that: the calls
that moved on after the backup.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.models import AuditEvent, AuditHead
from console.audit.witness import Line, failure, read_tail, read_whole
from console.config import Settings

MATCH_BATCH = 500  # witness events looked up in the database at once while looking for the common one


async def restore_problem(*, session: AsyncSession, settings: Settings) -> str | None:
    """`witness_problem` for the configured witness; None without one."""
    if not settings.audit_witness_file:
        return None
    return await witness_problem(session=session, path=settings.audit_witness_file)


async def witness_problem(*, session: AsyncSession, path: str | Path) -> str | None:
    """One line saying why the database's chain does not reach what its witness recorded (restored from
    an older backup), or why this process cannot write the witness; None when all is well."""
    written = failure(path)
    if written is not None:
        return written
    return await _behind(session, path)


async def _behind(session: AsyncSession, path: str | Path) -> str | None:
    tail = read_tail(path)
    last = tail.last if tail is not None else None
    if last is None:
        return None
    stored = (await session.execute(select(AuditEvent.hash).where(AuditEvent.seq == last.seq))).scalar()
    if stored == last.hash:
        return None
    head = (await session.execute(select(AuditHead.seq).where(AuditHead.id == 1))).scalar_one()
    if stored is None and head < last.seq:
        return (
            f"the audit chain ends at seq {head} but its witness {path} recorded seq {last.seq}: "
            "this database was restored from an older backup, or lost the end of its log"
        )
    return (
        f"the audit event at seq {last.seq} is not the one its witness {path} recorded: this database "
        "was restored from an older backup and written to since"
    )


@dataclass(frozen=True)
class Since:
    """What the witness recorded after the last event the database shares with it."""

    common_seq: int
    witness_seq: int
    witness_hash: str
    lines: list[Line]
    missed: bool  # the witness missed some of those events (a write failed): it cannot name every call


async def since_backup(*, session: AsyncSession, path: str | Path) -> Since | None:
    """What the witness recorded past the database's chain; None when the database reaches it."""
    if await _behind(session, path) is None:
        return None
    record = read_whole(path)
    last = record.last if record is not None else None
    if record is None or last is None:
        return None
    head = (await session.execute(select(AuditHead.seq).where(AuditHead.id == 1))).scalar_one()
    shared = sorted((s for s in record.events if s <= head), reverse=True)
    for start in range(0, len(shared), MATCH_BATCH):
        batch = shared[start : start + MATCH_BATCH]
        found = await session.execute(
            select(AuditEvent.seq, AuditEvent.hash).where(AuditEvent.seq.in_(batch))
        )
        stored = {row.seq: row.hash for row in found}
        matching = [s for s in batch if stored.get(s) == record.events[s].hash]
        if matching:
            common = max(matching)
            break
    else:  # none shared (the witness began after this chain's end), or none alike (another chain)
        common = 0 if shared else head
    return Since(common, last.seq, last.hash, record.after(common), record.missed_after(common))
