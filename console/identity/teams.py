"""Managing teams and their members: site admins create teams, team admins manage their own team.

`by` is the person acting; `None` stands for the operator at the command line, who may do anything.
Every check reads the database inside the transaction that makes the change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.errors import Conflict, Forbidden, InvalidInput, NotFound
from console.identity.models import ROLES, Membership, Team, User
from console.identity.passwords import hash_password
from console.identity.service import create_team, membership_of, team_by_name
from console.identity.tokens import revoke_member_tokens
from console.identity.viewer import Viewer

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
LAST_ADMIN = "a team needs at least one admin: make someone else admin first"


@dataclass(frozen=True)
class TeamRow:
    id: str
    name: str
    members: int


@dataclass(frozen=True)
class MemberRow:
    user_id: str
    name: str
    role: str


def actor_of(by: Viewer | None) -> Actor:
    return SYSTEM if by is None else by.actor


def check_name(kind: str, name: str) -> str:
    """A name that is safe in a URL path segment.

    Raises:
        InvalidInput.
    """
    name = name.strip()
    if not NAME.fullmatch(name):
        message = "1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit"
        raise InvalidInput(f"invalid {kind} name", {"name": message})
    return name


async def require_team_admin(*, session: AsyncSession, by: Viewer | None, team_name: str) -> Team:
    """The team, if `by` may manage it (its admins and site admins).

    Raises:
        NotFound: no such team (said only to site admins).  Forbidden: not an admin of the team.
    """
    if by is None or await _is_site_admin(session, by.user_id):
        return await team_by_name(session=session, name=team_name)
    query = (
        select(Team)
        .join(Membership, Membership.team_id == Team.id)
        .where(Team.name == team_name, Membership.user_id == by.user_id, Membership.role == "admin")
    )
    team = (await session.execute(query)).scalar_one_or_none()
    if team is None:
        # The same answer whether or not the team exists: outsiders learn no team names here.
        raise Forbidden(f"only admins of {team_name} can manage it")
    return team


async def is_site_admin(*, session: AsyncSession, by: Viewer | None) -> bool:
    """Whether `by` is the operator (`None`) or a site admin, read inside the caller's transaction."""
    return by is None or await _is_site_admin(session, by.user_id)


async def administered_teams(*, session: AsyncSession, by: Viewer | None) -> list[TeamRow]:
    """The teams `by` may manage, by name; every team for a site admin and the operator.

    Raises:
        Forbidden: `by` administers no team.
    """
    counts = (
        select(Team.id, Team.name, func.count(Membership.id))
        .outerjoin(Membership, Membership.team_id == Team.id)
        .group_by(Team.id, Team.name)
        .order_by(Team.name)
    )
    site_admin = by is None or await _is_site_admin(session, by.user_id)
    if by is not None and not site_admin:
        mine = select(Membership.team_id).where(Membership.user_id == by.user_id, Membership.role == "admin")
        counts = counts.where(Team.id.in_(mine))
    rows = [TeamRow(*row) for row in (await session.execute(counts)).all()]
    if not rows and not site_admin:
        raise Forbidden("you are not an admin of any team")
    return rows


async def new_team(*, session: AsyncSession, by: Viewer | None, name: str) -> Team:
    """Create a team (site admins only).

    Raises:
        Forbidden, InvalidInput (bad name), Conflict (name taken).
    """
    if by is not None and not await _is_site_admin(session, by.user_id):
        raise Forbidden("only site admins can create teams")
    return await create_team(session=session, name=check_name("team", name), actor=actor_of(by))


async def team_members(*, session: AsyncSession, by: Viewer | None, team_name: str) -> list[MemberRow]:
    """The team's members by name, for its admins.

    Raises:
        NotFound, Forbidden.
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    members = await members_of(session=session, team_id=team.id)
    return members


async def members_of(*, session: AsyncSession, team_id: str) -> list[MemberRow]:
    """The team's members by name (a query helper)."""
    query = (
        select(User.id, User.name, Membership.role)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.team_id == team_id)
        .order_by(User.name)
    )
    return [MemberRow(*row) for row in (await session.execute(query)).all()]


async def add_member(
    *, session: AsyncSession, by: Viewer | None, team_name: str, user_name: str, role: str
) -> None:
    """Give an existing user a role in the team.

    Raises:
        Forbidden, NotFound (team or user), InvalidInput (role), Conflict (already a member).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    _check_role(role)
    user = await _user(session, user_name)
    if await membership_of(session, user.id, team.id) is not None:
        raise Conflict(f"{user_name} is already a member of {team_name}")
    session.add(Membership(user_id=user.id, team_id=team.id, role=role))
    _record(session, by, "member_added", user, team, role=role)


async def change_role(
    *, session: AsyncSession, by: Viewer | None, team_name: str, user_name: str, role: str
) -> None:
    """Change a member's role; the team's last admin keeps theirs.

    Raises:
        Forbidden, NotFound (team, user or membership), InvalidInput (role), Conflict (last admin).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    _check_role(role)
    user, membership = await _member(session, team, user_name)
    if membership.role == role:
        return
    if membership.role == "admin":
        await _keep_an_admin(session, team.id)
    previous, membership.role = membership.role, role
    _record(session, by, "member_role_changed", user, team, role=role, previous=previous)


async def remove_member(*, session: AsyncSession, by: Viewer | None, team_name: str, user_name: str) -> None:
    """Take a user out of the team and revoke their API tokens for it for good; never the last admin.

    Raises:
        Forbidden, NotFound (team, user or membership), Conflict (last admin).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    user, membership = await _member(session, team, user_name)
    if membership.role == "admin":
        await _keep_an_admin(session, team.id)
    await session.delete(membership)
    _record(session, by, "member_removed", user, team, role=membership.role)
    await revoke_member_tokens(
        session=session, actor=actor_of(by), user=user, team_id=team.id, team_name=team.name
    )


async def make_site_admin(*, session: AsyncSession, name: str, password: str | None = None) -> User:
    """Make a user (created if new) a site admin, who may create and manage every team."""
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    if user is None:
        user = User(name=check_name("user", name), password_hash=None)
        session.add(user)
    if password:
        user.password_hash = hash_password(password)
    user.site_admin = True
    await session.flush()
    record_event(
        session=session,
        actor=SYSTEM,
        action="site_admin_granted",
        subject_type="user",
        subject_id=user.id,
        payload={"user": name},
    )
    return user


async def _keep_an_admin(session: AsyncSession, team_id: str) -> None:
    # Locking the admin rows (PostgreSQL) makes two admins demoting each other at once take turns.
    query = select(Membership.id).where(Membership.team_id == team_id, Membership.role == "admin")
    admins = (await session.execute(query.with_for_update())).all()
    if len(admins) <= 1:
        raise Conflict(LAST_ADMIN)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}", {"role": "unknown role"})


async def _user(session: AsyncSession, name: str) -> User:
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    if user is None:
        raise NotFound(f"no user {name!r}")
    return user


async def _member(session: AsyncSession, team: Team, user_name: str) -> tuple[User, Membership]:
    user = await _user(session, user_name)
    membership = await membership_of(session, user.id, team.id)
    if membership is None:
        raise NotFound(f"{user_name} is not a member of {team.name}")
    return user, membership


async def _is_site_admin(session: AsyncSession, user_id: str) -> bool:
    flag = (await session.execute(select(User.site_admin).where(User.id == user_id))).scalar_one_or_none()
    return bool(flag)


def _record(
    session: AsyncSession, by: Viewer | None, action: str, user: User, team: Team, **extra: str
) -> None:
    record_event(
        session=session,
        actor=actor_of(by),
        action=action,
        subject_type="user",
        subject_id=user.id,
        payload={"team": team.name, "user": user.name, **extra},
    )
