"""API tokens as their owners manage them: issue one (shown once), list them, revoke one.

Each token also gets a webhook secret (`whsec_…`, Standard Webhooks), shown once as well, that signs the
callbacks to the calls it starts; it is sealed (the console's secret key opens it, bound to the token)
and can be replaced at any time (`rotate_webhook_secret`)."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.db import utcnow
from console.errors import InvalidInput, NotFound
from console.identity.credentials import CredentialCipher
from console.identity.models import ApiToken, Team, User
from console.identity.passwords import new_token_secret, token_hash

MAX_NAME = 100


@dataclass(frozen=True)
class IssuedToken:
    token: str
    webhook_secret: str | None  # None when no console secret key is set (no callbacks then)


def webhook_secret_binding(token_id: str) -> str:
    return f"api-token:{token_id}:webhook-secret"


def new_webhook_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class TokenInfo:
    id: str
    name: str
    team: str
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


async def issue_token(
    *,
    session: AsyncSession,
    actor: Actor,
    user_id: str,
    team_id: str,
    name: str,
    cipher: CredentialCipher | None = None,
) -> IssuedToken:
    """A new token for the user in the team (they must be a member): the secret, stored only hashed, and
    its webhook secret, stored sealed (with a `cipher` that is ready).

    Raises:
        InvalidInput: empty or overlong name.
    """
    name = name.strip()
    if not name or len(name) > MAX_NAME:
        raise InvalidInput("invalid token", {"name": f"must be 1 to {MAX_NAME} characters"})
    secret = new_token_secret()
    token = ApiToken(user_id=user_id, team_id=team_id, name=name, token_hash=token_hash(secret))
    session.add(token)
    await session.flush()
    webhook_secret = None
    if cipher is not None and cipher.ready:
        webhook_secret = new_webhook_secret()
        token.sealed_webhook_secret = cipher.seal_bound(webhook_secret, webhook_secret_binding(token.id))
    record_event(
        session=session,
        actor=actor,
        action="token_created",
        subject_type="token",
        subject_id=token.id,
        payload={"user": user_id, "team": team_id, "name": name},
    )
    return IssuedToken(secret, webhook_secret)


async def rotate_webhook_secret(
    *,
    session: AsyncSession,
    actor: Actor,
    cipher: CredentialCipher,
    token_id: str,
    owner_id: str | None = None,
) -> str:
    """A new webhook secret for a live token (with `owner_id`, only that user's own), replacing the old one
    at once; returns it.

    Raises:
        NotFound: no such live token (for that owner). SecretMissing: no console secret key.
    """
    token = await session.get(ApiToken, token_id)
    if token is None or token.revoked_at is not None or owner_id not in (None, token.user_id):
        raise NotFound(f"no live token {token_id!r}")
    secret = new_webhook_secret()
    token.sealed_webhook_secret = cipher.seal_bound(secret, webhook_secret_binding(token.id))
    record_event(
        session=session,
        actor=actor,
        action="token_webhook_secret_rotated",
        subject_type="token",
        subject_id=token.id,
        payload={"user": token.user_id, "name": token.name},
    )
    return secret


async def list_tokens(*, session: AsyncSession, user_name: str) -> list[TokenInfo]:
    """The user's tokens, newest first, revoked ones included (never the secrets)."""
    rows = (
        await session.execute(
            select(ApiToken, Team.name)
            .join(Team, Team.id == ApiToken.team_id)
            .join(User, User.id == ApiToken.user_id)
            .where(User.name == user_name)
            .order_by(ApiToken.created_at.desc())
        )
    ).all()
    return [TokenInfo(t.id, t.name, team, t.created_at, t.last_used_at, t.revoked_at) for t, team in rows]


async def revoke_token(
    *,
    session: AsyncSession,
    actor: Actor,
    token_id: str,
    owner_id: str | None = None,
    team_id: str | None = None,
    revoked_by: str | None = None,
) -> None:
    """Revoke a token at once; with `owner_id`, only that user's own, with `team_id`, only one of that team.
    `revoked_by` names who revoked someone else's token in the audit event.

    Raises:
        NotFound: no such token (for that owner, in that team).
    """
    query = (
        select(ApiToken, User, Team.name)
        .join(User, User.id == ApiToken.user_id)
        .join(Team, Team.id == ApiToken.team_id)
        .where(ApiToken.id == token_id)
    )
    if owner_id is not None:
        query = query.where(ApiToken.user_id == owner_id)
    if team_id is not None:
        query = query.where(ApiToken.team_id == team_id)
    row = (await session.execute(query)).one_or_none()
    if row is None:
        raise NotFound(f"no token {token_id!r}")
    token, owner, team_name = row
    if token.revoked_at is None:
        why = {} if revoked_by is None else {"revoked_by": revoked_by}
        await _revoke(session, actor, token, owner, team_name, why)


async def revoke_member_tokens(
    *, session: AsyncSession, actor: Actor, user: User, team_id: str, team_name: str
) -> None:
    """Revoke for good every live token of the user in the team, as their membership there ends.

    In the same transaction as the membership's end, so a membership never ends with its tokens alive.
    """
    query = select(ApiToken).where(
        ApiToken.user_id == user.id, ApiToken.team_id == team_id, ApiToken.revoked_at.is_(None)
    )
    for token in (await session.execute(query.order_by(ApiToken.created_at, ApiToken.id))).scalars():
        await _revoke(session, actor, token, user, team_name, {"reason": "membership ended"})


async def _revoke(
    session: AsyncSession, actor: Actor, token: ApiToken, owner: User, team_name: str, why: dict[str, str]
) -> None:
    await session.execute(update(ApiToken).where(ApiToken.id == token.id).values(revoked_at=utcnow()))
    record_event(
        session=session,
        actor=actor,
        action="token_revoked",
        subject_type="token",
        subject_id=token.id,
        payload={"user": owner.id, "owner": owner.name, "name": token.name, "team": team_name, **why},
    )
