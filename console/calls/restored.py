"""A database restored from an older backup: the calls that moved on after the backup wait for a person.

Restoring a backup makes a question answered after it pending again, and a request sent after it ready
again: left alone, the console would send them a second time. Before a process starts sending, it asks
the audit witness (console/audit/witness.py) what happened past the restored chain, and every unfinished
call the witness names (answered, sent, or otherwise moved on since) becomes `interrupted`, its request
kept for a person to send again or abandon, as after a crash that hid whether a request went out.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM, record_event
from console.audit.chain import RESTORED_TO
from console.audit.models import AuditHead
from console.audit.witnessing import since_backup
from console.calls.models import Call, DispatchJob, Elicitation
from console.calls.moves import move_job, question_may_become
from console.calls.questions.inbox import RESTORED
from console.calls.replies.outcomes import record_lost
from console.calls.states import TERMINAL, JobStatus, QuestionStatus
from console.config import Settings
from console.db import utcnow
from console.transactions import after_commit, transaction

logger = logging.getLogger(__name__)

# Events about a call that change nothing it sends: they alone never hold it.
HARMLESS = frozenset(
    {"access_refused", "oauth_refused", "csrf_failed", "notification_failed", "notification_resent"}
)
# A job that is, or may be, on its way to the server.
OUT = (JobStatus.READY, JobStatus.CLAIMED, JobStatus.SENDING, JobStatus.PARKED)
SENT_AFTER_BACKUP = (
    "answered or sent after the backup this database was restored from: whether its server got the "
    "request is unknown here, so a person decides whether to send it again"
)
ANSWERED_AFTER_BACKUP = (
    "answered after the backup this database was restored from, and that answer is not in it: "
    "nothing is sent; abandon the call, and make it again if it is still wanted"
)


@dataclass(frozen=True)
class Restore:
    """What was found out and done: the calls held, and those the witness knows of but this database
    does not (started after the backup)."""

    database_seq: int
    witness_seq: int
    held: list[str]
    unknown: int
    every_unfinished: bool  # the witness missed events, so every unfinished call was held


async def hold_if_restored(factory: async_sessionmaker[AsyncSession], settings: Settings) -> Restore | None:
    """`hold_after_restore` with the configured witness, before a process sends anything; None without
    a witness."""
    if not settings.audit_witness_file:
        return None
    async with transaction(factory) as session:
        return await hold_after_restore(session=session, witness=settings.audit_witness_file)


async def hold_after_restore(*, session: AsyncSession, witness: str | Path) -> Restore | None:
    """When the database's chain is behind its witness, hold the calls that moved on after the backup as
    `interrupted` and record the restore (`restore_detected`), in the caller's transaction; None when it
    is not behind."""
    # The head first: on PostgreSQL another process starting at the same time waits here, and then finds
    # the witness agreeing (this transaction writes it before it commits); SQLite's BEGIN IMMEDIATE
    # already holds the whole database.
    await session.execute(select(AuditHead.seq).where(AuditHead.id == 1).with_for_update())
    since = await since_backup(session=session, path=witness)
    if since is None:
        return None
    named = {line.call for line in since.lines if line.call is not None and line.action not in HARMLESS}
    if since.missed:
        named |= set((await session.execute(select(Call.id).where(Call.status.not_in(TERMINAL)))).scalars())
    found = (await session.execute(select(Call).where(Call.id.in_(named)))).scalars().all()
    unfinished = sorted((call for call in found if call.status not in TERMINAL), key=lambda call: call.id)
    restore = Restore(
        since.common_seq,
        since.witness_seq,
        [call.id for call in unfinished],
        len(named) - len(found),
        since.missed,
    )
    record_event(  # first: its line in the witness says where the restored chain leaves the old one
        session=session,
        actor=SYSTEM,
        action="restore_detected",
        subject_type="audit",
        subject_id="chain",
        payload={
            "database_seq": since.common_seq,
            "witness_seq": since.witness_seq,
            "witness_hash": since.witness_hash,
            "held": restore.held,
            "unknown_calls": restore.unknown,
            "witness_missed_events": since.missed,
        },
    )
    for call in unfinished:
        await _hold(session, call)
    session.info[RESTORED_TO] = since.common_seq
    after_commit(
        session,
        partial(
            logger.warning,
            "this database was restored from a backup: its audit chain ends at seq %s, its witness went to "
            "seq %s; %s unfinished calls held as interrupted, %s calls it does not know",
            since.common_seq,
            since.witness_seq,
            len(restore.held),
            restore.unknown,
        ),
    )
    return restore


async def _hold(session: AsyncSession, call: Call) -> None:
    jobs = (
        (
            await session.execute(
                select(DispatchJob)
                .where(DispatchJob.call_id == call.id, DispatchJob.status.in_(OUT))
                .order_by(DispatchJob.created_at.desc())
            )
        )
        .scalars()
        .all()
    )
    now = utcnow()
    await session.execute(
        update(Elicitation)
        .where(Elicitation.call_id == call.id, question_may_become(QuestionStatus.INTERRUPTED))
        .values(status=QuestionStatus.INTERRUPTED, decided_at=now, decided_via=RESTORED)
    )
    for older in jobs[1:]:
        move_job(older, JobStatus.DONE)
    if jobs:
        record_lost(session=session, call=call, job=jobs[0], reason=SENT_AFTER_BACKUP)
    else:
        record_lost(session=session, call=call, job=None, reason=ANSWERED_AFTER_BACKUP)
    logger.warning("call %s interrupted: restored from a backup", call.id, extra={"call_id": call.id})
