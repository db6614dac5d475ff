"""The run an MCP agent's requests belong to, found or opened by a key the gateway derives."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.calls.access import refuse_read_only
from console.calls.models import Run
from console.identity import Principal


async def run_for_agent(
    *, session: AsyncSession, principal: Principal, key: str, title: str, agent: str
) -> Run:
    """The caller's run filed under `key` in their team, opened (and audited) on first use.

    Raises:
        Forbidden: the caller is read-only in the team (recorded).
    """
    found = await _find(session, principal, key)
    if found is not None:
        await session.commit()
        return found
    await refuse_read_only(
        session=session,
        viewer=principal.viewer,
        team_id=principal.team_id,
        attempt="create_run",
        subject_type="team",
        subject_id=principal.team_id,
    )
    run = Run(
        team_id=principal.team_id,
        owner_id=principal.user_id,
        title=title[:500],
        agent=agent[:200],
        gateway_key=key[:300],
    )
    session.add(run)
    try:
        await session.flush()
    except IntegrityError:  # another request of the same agent opened it first
        await session.rollback()
        raced = await _find(session, principal, key)
        await session.commit()
        if raced is None:
            raise
        return raced
    record_event(
        session=session,
        actor=principal.actor,
        action="run_created",
        subject_type="run",
        subject_id=run.id,
        payload={"title": run.title, "agent": run.agent, "source": "mcp gateway"},
    )
    await session.commit()
    return run


async def _find(session: AsyncSession, principal: Principal, key: str) -> Run | None:
    query = select(Run).where(
        Run.team_id == principal.team_id, Run.gateway_key == key[:300], Run.owner_id == principal.user_id
    )
    return (await session.execute(query)).scalar_one_or_none()
