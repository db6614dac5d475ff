"""The run an MCP agent's requests belong to, found or opened by a key the gateway derives."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.access import refuse_read_only
from console.calls.models import Run
from console.calls.service import open_run
from console.identity import Principal


async def run_for_agent(
    *, session: AsyncSession, principal: Principal, key: str, title: str, agent: str
) -> Run:
    """The caller's run filed under `key` in their team, opened (and audited) on first use, in the
    caller's transaction.

    Raises:
        Forbidden: the caller is read-only in the team (recorded).
    """
    found = await _find(session, principal, key)
    if found is not None:
        return found
    await refuse_read_only(  # before the savepoint, which would take the record of it along
        session=session,
        viewer=principal.viewer,
        team_id=principal.team_id,
        attempt="create_run",
        subject_type="team",
        subject_id=principal.team_id,
    )
    try:
        async with session.begin_nested():
            return await open_run(
                session=session,
                principal=principal,
                title=title[:500],
                agent=agent[:200],
                gateway_key=key[:300],
            )
    except IntegrityError:  # another request of the same agent opened it first
        raced = await _find(session, principal, key)
        if raced is None:
            raise
        return raced


async def _find(session: AsyncSession, principal: Principal, key: str) -> Run | None:
    query = select(Run).where(
        Run.team_id == principal.team_id, Run.gateway_key == key[:300], Run.owner_id == principal.user_id
    )
    return (await session.execute(query)).scalar_one_or_none()
