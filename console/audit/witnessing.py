"""Comparing the database's chain with its witness (console/audit/witness.py), to find a restore.

`witness_problem` is the quick check `/readyz` and `console audit verify` run: the witness's newest
event must be in the database with the same hash. `since_backup` reads the whole witness to find the
last event the restored database shares with it, and what the witness recorded after that: the calls
that moved on after the backup.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    wrong = [] if tail is None else await _not_in_chain(session, tail.lines)
    if not wrong:
        return None
    newest = max(wrong, key=lambda line: line.seq)
    head = (await session.execute(select(AuditHead.seq).where(AuditHead.id == 1))).scalar_one()
    if head < newest.seq:
        return (
            f"the audit chain ends at seq {head} but its witness {path} recorded seq {newest.seq}: "
            "this database was restored from an older backup, or lost the end of its log"
        )
    return (
        f"the audit event at seq {newest.seq} is not the one its witness {path} recorded: this database "
        "was restored from an older backup and written to since"
    )


async def _not_in_chain(session: AsyncSession, lines: Sequence[Line]) -> list[Line]:
    """The witness's lines whose event the database's chain lacks (or holds with another hash), newest
    first; from the newest down, until a batch of them is all in the chain: below the backup's seq the
    restored chain is the one the witness followed."""
    wrong: list[Line] = []
    newest_first = sorted(lines, key=lambda line: line.seq, reverse=True)
    for start in range(0, len(newest_first), MATCH_BATCH):
        batch = newest_first[start : start + MATCH_BATCH]
        seqs = {line.seq for line in batch}
        found = await session.execute(select(AuditEvent.seq, AuditEvent.hash).where(AuditEvent.seq.in_(seqs)))
        stored = {row.seq: row.hash for row in found}
        missing = [line for line in batch if stored.get(line.seq) != line.hash]
        if not missing:
            break
        wrong.extend(missing)
    return wrong


@dataclass(frozen=True)
class Since:
    """What the witness recorded that the database's chain lacks: what happened after the backup."""

    common_seq: int  # the chain and the witness agree up to here
    witness_seq: int
    witness_hash: str
    lines: list[Line]
    missed: bool  # a write failed after the common seq: the witness cannot name every call


async def since_backup(*, session: AsyncSession, path: str | Path) -> Since | None:
    """What the witness recorded past the database's chain; None when the chain holds all of it."""
    if await _behind(session, path) is None:
        return None
    record = read_whole(path)
    wrong = [] if record is None else await _not_in_chain(session, record.lines)
    if record is None or not wrong:
        return None
    newest = max(wrong, key=lambda line: line.seq)
    common = min(line.seq for line in wrong) - 1
    return Since(common, newest.seq, newest.hash, wrong, record.missed_after(common))
