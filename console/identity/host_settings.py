"""Settings that name something on the console's host — a program to run, an environment variable, a file,
a place in its file system, a loopback, link-local or private address — are the site admin's alone: a team
admin who could set one could make the console read, run or reach what only its operator may. Each such
setting is refused to anyone else with 403, and the refusal is audited as `access_refused` (docs/security.md,
"Settings only a site admin may set", lists them).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.errors import Forbidden
from console.identity.teams import actor_of, is_site_admin
from console.identity.viewer import Viewer
from console.transactions import keep_writes


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
    `access_refused` and refuse. Called before the request writes anything, so what commits of its
    transaction is the record alone.

    Raises:
        Forbidden: with `reason`, raised with `keep_writes`.
    """
    if await is_site_admin(session=session, by=by):
        return
    record_event(
        session=session,
        actor=actor_of(by),
        action="access_refused",
        subject_type=subject_type,
        subject_id=subject_id,
        team_id=team_id,
        payload={"attempt": attempt, "reason": reason, **details},
    )
    raise keep_writes(session, Forbidden(reason))
