"""Who may change runs and calls: auditors only look, whatever else they are (an owner made auditor too)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_refusal
from console.errors import Forbidden
from console.identity.viewer import READ_ONLY, Viewer


async def refuse_read_only(
    *,
    session: AsyncSession,
    viewer: Viewer,
    team_id: str,
    attempt: str,
    subject_type: str,
    subject_id: str,
    call_id: str | None = None,
) -> None:
    """Refuse (and audit as `access_refused`) a change by someone whose role in the team is read-only.

    The role is the one read for this request, so a role change applies from the next request on.

    Raises:
        Forbidden: the viewer is an auditor of the team; only the record of it commits (`keep_only`).
    """
    if not viewer.read_only_in(team_id):
        return
    raise record_refusal(
        session=session,
        error=Forbidden(READ_ONLY),
        actor=viewer.actor,
        subject_type=subject_type,
        subject_id=subject_id,
        call_id=call_id,
        team_id=team_id,
        attempt=attempt,
        reason=READ_ONLY,
        role=viewer.role_in(team_id),
    )
