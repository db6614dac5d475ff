"""A team's API tokens as its admins see them: every member's, with owner and state; any can be revoked."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.identity.models import ApiToken, User
from console.identity.teams import actor_of, require_team_admin
from console.identity.tokens import revoke_token
from console.identity.viewer import Viewer


@dataclass(frozen=True)
class TeamToken:
    id: str
    name: str
    owner: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


async def team_tokens(*, session: AsyncSession, by: Viewer | None, team_name: str) -> list[TeamToken]:
    """Every token of the team, newest first, revoked ones included (never the secrets).

    Raises:
        NotFound (team), Forbidden (not an admin of it).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    rows = (
        await session.execute(
            select(ApiToken, User.name)
            .join(User, User.id == ApiToken.user_id)
            .where(ApiToken.team_id == team.id)
            .order_by(ApiToken.created_at.desc(), ApiToken.id)
        )
    ).all()
    return [TeamToken(t.id, t.name, owner, t.created_at, t.last_used_at, t.revoked_at) for t, owner in rows]


async def revoke_team_token(
    *, session: AsyncSession, by: Viewer | None, team_name: str, token_id: str
) -> None:
    """Revoke any token of the team; the next request with it is refused.

    Raises:
        NotFound (team, or no such token in it), Forbidden (not an admin of the team).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    await revoke_token(
        session=session,
        actor=actor_of(by),
        token_id=token_id,
        team_id=team.id,
        revoked_by=by.user_name if by is not None else "console operator",
    )
