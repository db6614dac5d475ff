"""The run an MCP agent's requests belong to, found or opened by a key the gateway derives."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Run
from console.calls.service import open_run
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
    try:
        run = await open_run(
            session=session, principal=principal, title=title[:500], agent=agent[:200], gateway_key=key[:300]
        )
    except IntegrityError:  # another request of the same agent opened it first
        await session.rollback()
        raced = await _find(session, principal, key)
        await session.commit()
        if raced is None:
            raise
        return raced
    await session.commit()
    return run


async def _find(session: AsyncSession, principal: Principal, key: str) -> Run | None:
    query = select(Run).where(
        Run.team_id == principal.team_id, Run.gateway_key == key[:300], Run.owner_id == principal.user_id
    )
    return (await session.execute(query)).scalar_one_or_none()
