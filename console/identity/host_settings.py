"""Settings that name something on the console's host — a program to run, an environment variable, a file,
a place in its file system, a loopback, link-local or private address — are the site admin's alone: a team
admin who could set one could make the console read, run or reach what only its operator may. Each such
setting is refused to anyone else with 403, and the refusal is audited as `access_refused` (docs/security.md,
"Settings only a site admin may set", lists them).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_refusal
from console.errors import Forbidden
from console.identity.teams import actor_of, is_site_admin
from console.identity.viewer import Viewer


async def only_site_admin(
    *,
    session: AsyncSession,
    by: Viewer | None,
    team_id: str,
    attempt: str,
    subject_type: str,
    subject_id: str,
    reason: str,
    **details: str | None,
) -> None:
    """Return when `by` is a site admin (or the operator); otherwise record the refusal as
    `access_refused` and refuse: what commits of the request's transaction is the record alone, wherever
    the request calls it.

    Raises:
        Forbidden: with `reason`, raised with `keep_only`.
    """
    if await is_site_admin(session=session, by=by):
        return
    raise record_refusal(
        session=session,
        error=Forbidden(reason),
        actor=actor_of(by),
        subject_type=subject_type,
        subject_id=subject_id,
        team_id=team_id,
        attempt=attempt,
        reason=reason,
        **details,
    )
