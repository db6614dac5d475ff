"""Teams, users, memberships and API tokens: creating them and resolving a bearer token."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.db import flush_unique, reads_without_begin, utcnow
from console.errors import InvalidInput, NotFound, Unauthorized
from console.identity.credentials import CredentialCipher
from console.identity.models import ROLES, ApiToken, Membership, Team, User
from console.identity.passwords import hash_password, token_hash
from console.identity.tokens import IssuedToken, issue_token
from console.identity.viewer import Viewer
from console.transactions import end_read

LAST_USED_RESOLUTION = timedelta(minutes=1)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: a user acting within one team."""

    user_id: str
    user_name: str
    team_id: str
    team_name: str
    role: str
    token_id: str | None = None

    @property
    def actor(self) -> Actor:
        return self.viewer.actor

    @property
    def viewer(self) -> Viewer:
        via = f"token:{self.token_id}" if self.token_id else None
        return Viewer(
            self.user_id, self.user_name, {self.team_id: self.role}, {self.team_id: self.team_name}, via
        )


async def create_team(*, session: AsyncSession, name: str, actor: Actor = SYSTEM) -> Team:
    """Create a team.

    Raises:
        Conflict: a team of that name exists.
    """
    team = Team(name=name)
    session.add(team)
    await flush_unique(session, f"team {name!r} already exists")
    record_event(
        session=session,
        actor=actor,
        action="team_created",
        subject_type="team",
        subject_id=team.id,
        payload={"name": name},
    )
    return team


async def create_user(
    *, session: AsyncSession, name: str, team_name: str, role: str, password: str | None = None
) -> User:
    """Create a user (or reuse one of that name) and give them `role` in the team.

    Raises:
        NotFound: no such team.  InvalidInput: unknown role.  Conflict: already a member of the team.
    """
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    team = await team_by_name(session=session, name=team_name)
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    if user is None:
        user = User(name=name, password_hash=hash_password(password) if password else None)
        session.add(user)
        await session.flush()
    elif password:
        user.password_hash = hash_password(password)
    session.add(Membership(user_id=user.id, team_id=team.id, role=role))
    await flush_unique(session, f"{name} is already a member of {team_name}")
    record_event(
        session=session,
        actor=SYSTEM,
        action="membership_added",
        subject_type="user",
        subject_id=user.id,
        payload={"team": team_name, "role": role, "user": name},
    )
    return user


async def create_token(
    *,
    session: AsyncSession,
    user_name: str,
    team_name: str,
    name: str = "cli",
    cipher: CredentialCipher | None = None,
) -> IssuedToken:
    """Create an API token for the user in the team and return it (only its hash is stored), with its
    webhook secret when a ready `cipher` seals it.

    Raises:
        NotFound: no such user or team, or the user is not a member of the team.
    """
    team = await team_by_name(session=session, name=team_name)
    user = (await session.execute(select(User).where(User.name == user_name))).scalar_one_or_none()
    if user is None:
        raise NotFound(f"no user {user_name!r}")
    membership = await membership_of(session, user.id, team.id)
    if membership is None:
        raise NotFound(f"{user_name} is not a member of {team_name}")
    return await issue_token(
        session=session, actor=SYSTEM, user_id=user.id, team_id=team.id, name=name, cipher=cipher
    )


async def authenticate_token(*, session: AsyncSession, token: str) -> Principal:
    """The principal a bearer token stands for.

    Raises:
        Unauthorized: unknown or revoked token, or the user left the team.
    """
    await reads_without_begin(session)  # on every API request: a read and at most one single-row update
    found = await session.execute(_PRINCIPAL_OF_TOKEN, {"token_hash": token_hash(token)})
    row = found.one_or_none()
    if row is None:
        raise Unauthorized("invalid or revoked API token")
    now = utcnow()
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_RESOLUTION:
        await session.execute(update(ApiToken).where(ApiToken.id == row.token_id).values(last_used_at=now))
    # A read without BEGIN ends itself: what the caller writes next is a transaction again, not a
    # statement committed at once.
    await end_read(session)
    return Principal(row.user_id, row.user_name, row.team_id, row.team_name, row.role, row.token_id)


# Built once: this runs on every API and gateway request, and building it cost more than running it.
_PRINCIPAL_OF_TOKEN = (
    select(
        ApiToken.id.label("token_id"),
        ApiToken.last_used_at,
        User.id.label("user_id"),
        User.name.label("user_name"),
        Team.id.label("team_id"),
        Team.name.label("team_name"),
        Membership.role,
    )
    .join(User, User.id == ApiToken.user_id)
    .join(Team, Team.id == ApiToken.team_id)
    .join(Membership, (Membership.user_id == User.id) & (Membership.team_id == Team.id))
    .where(ApiToken.token_hash == bindparam("token_hash"), ApiToken.revoked_at.is_(None))
)


async def team_by_name(*, session: AsyncSession, name: str) -> Team:
    """Raises: NotFound."""
    team = (await session.execute(select(Team).where(Team.name == name))).scalar_one_or_none()
    if team is None:
        raise NotFound(f"no team {name!r}")
    return team


async def role_in_team(*, session: AsyncSession, user_id: str, team_id: str) -> str | None:
    membership = await membership_of(session, user_id, team_id)
    return membership.role if membership else None


async def membership_of(session: AsyncSession, user_id: str, team_id: str) -> Membership | None:
    query = select(Membership).where(Membership.user_id == user_id, Membership.team_id == team_id)
    return (await session.execute(query)).scalar_one_or_none()
