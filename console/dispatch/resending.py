"""A lost request to a server its admin marked idempotent is sent again by the console, a bounded number of
times, instead of waiting for a person's Send again; a request people decided never is."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.calls.models import Call, DispatchJob
from console.calls.moves import move_call, move_job
from console.calls.replies.outcomes import record_lost
from console.calls.states import CallStatus, JobStatus
from console.calls.tasks import CANCEL
from console.config import Settings
from console.db import utcnow


def record_lost_or_resend(
    *, session: AsyncSession, call: Call, job: DispatchJob, reason: str, idempotent: bool, settings: Settings
) -> bool:
    """The request went out and its outcome is unknown. To a server marked `idempotent`, the job is queued
    again (after a backoff; a server still down then defers it as any unreachable one) while it has been
    sent at most `CONSOLE_IDEMPOTENT_RESENDS` times, unless people decided what it sends (it carries their
    attestation) or the server held it open while people answered; otherwise the call is interrupted for a
    person to decide. Whether it was queued again; the caller commits."""
    if not (
        idempotent
        and job.attestation is None
        and job.kind != CANCEL  # sent once, as a courtesy, for a call that ended
        # not a held round, whose questions end with it
        and call.status in (CallStatus.RUNNING, CallStatus.RESUMING)
        and job.attempts <= settings.idempotent_resends
    ):
        record_lost(session=session, call=call, job=job, reason=reason)
        return False
    move_job(job, JobStatus.READY)
    job.claimed_by, job.lease_until, job.last_error = None, None, reason
    job.not_before = utcnow() + timedelta(seconds=min(2**job.attempts, 60))
    move_call(call, CallStatus.RESUMING)
    record_event(
        session=session,
        actor=SYSTEM,
        action="call_resent",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={
            "job": job.id,
            "kind": job.kind,
            "attestation": None,
            "automatic": True,
            "reason": reason,
            "sent": job.attempts,
            "resends": settings.idempotent_resends,
        },
    )
    return True
