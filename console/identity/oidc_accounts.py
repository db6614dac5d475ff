"""People who sign in through the provider: found by issuer and subject, created on first sign-in, and
their team memberships kept in line with the provider's teams claim."""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.identity.emails import email_from_claims
from console.identity.models import ROLES, Membership, Team, User
from console.identity.tokens import revoke_member_tokens

NAME_LENGTH = 90  # leaves room for a suffix within the 100 characters of User.name
MANUAL, FROM_CLAIM = "manual", "oidc"


async def find_or_create_user(*, session: AsyncSession, issuer: str, claims: Mapping[str, Any]) -> User:
    """The user with this issuer and subject, created (with a free name) when they sign in the first time;
    their email address follows the provider's verified `email` claim.

    An SSO identity is never merged into an existing account that happens to have the same name.
    """
    subject = str(claims["sub"])
    query = select(User).where(User.oidc_issuer == issuer, User.oidc_subject == subject)
    user = (await session.execute(query)).scalar_one_or_none()
    if user is not None:
        user.email = email_from_claims(claims) or user.email
        return user
    name = await _free_name(session, display_name(claims))
    user = User(name=name, oidc_issuer=issuer, oidc_subject=subject, email=email_from_claims(claims))
    session.add(user)
    await session.flush()
    record_event(
        session=session,
        actor=SYSTEM,
        action="user_created",
        subject_type="user",
        subject_id=user.id,
        payload={"name": name, "method": "oidc", "issuer": issuer},
    )
    return user


def display_name(claims: Mapping[str, Any]) -> str:
    """preferred_username, else email, else the subject, without control characters."""
    for key in ("preferred_username", "email", "sub"):
        value = claims.get(key)
        if isinstance(value, str) and (cleaned := _clean(value)):
            return cleaned
    return "user"


def _clean(text: str) -> str:
    visible = "".join(
        " " if c.isspace() else c for c in text if c.isspace() or not unicodedata.category(c).startswith("C")
    )
    return " ".join(visible.split())[:NAME_LENGTH]


async def _free_name(session: AsyncSession, wanted: str) -> str:
    candidates = [wanted, *(f"{wanted}-{n}" for n in range(2, 10))]
    taken = set((await session.execute(select(User.name).where(User.name.in_(candidates)))).scalars())
    for candidate in candidates:
        if candidate not in taken:
            return candidate
    return f"{wanted}-{secrets.token_hex(4)}"


def parse_teams_claim(value: object) -> dict[str, str]:
    """Team name -> role from a claim of "team" or "team:role" strings; anything else is ignored.

    The first entry for a team wins; the role defaults to member.
    """
    entries = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    wanted: dict[str, str] = {}
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            continue
        team, role = entry.strip(), "member"
        if ":" in team:
            team, role = team.rsplit(":", 1)
        if role in ROLES and team and team not in wanted:
            wanted[team] = role
    return wanted


async def sync_memberships(*, session: AsyncSession, user: User, wanted: Mapping[str, str]) -> None:
    """Give the user the claimed roles in existing teams and drop what the claim granted before but no
    longer names (with the user's API tokens for those teams); memberships made by hand are left as
    they are."""
    teams = {
        t.name: t.id
        for t in (await session.execute(select(Team).where(Team.name.in_(list(wanted))))).scalars()
    }
    query = (
        select(Membership, Team.name)
        .join(Team, Team.id == Membership.team_id)
        .where(Membership.user_id == user.id)
    )
    rows = (await session.execute(query)).all()
    current = {m.team_id: m for m, _ in rows}
    team_names = {m.team_id: name for m, name in rows}
    for team_name, role in wanted.items():
        team_id = teams.get(team_name)
        if team_id is None:
            continue
        membership = current.get(team_id)
        if membership is None:
            session.add(Membership(user_id=user.id, team_id=team_id, role=role, source=FROM_CLAIM))
            _record(session, "membership_added", user, team_name, role)
        elif membership.source == FROM_CLAIM and membership.role != role:
            membership.role = role
            _record(session, "membership_changed", user, team_name, role)
    claimed = set(teams.values())
    for membership in current.values():
        if membership.source == FROM_CLAIM and membership.team_id not in claimed:
            team_name = team_names[membership.team_id]
            await session.execute(delete(Membership).where(Membership.id == membership.id))
            _record(session, "membership_removed", user, team_name, membership.role)
            await revoke_member_tokens(
                session=session, actor=SYSTEM, user=user, team_id=membership.team_id, team_name=team_name
            )


def _record(session: AsyncSession, action: str, user: User, team: str, role: str) -> None:
    record_event(
        session=session,
        actor=SYSTEM,
        action=action,
        subject_type="user",
        subject_id=user.id,
        payload={"team": team, "role": role, "user": user.name, "source": "oidc_claim"},
    )
