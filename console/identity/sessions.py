"""Browser sign-in: password check with throttling, server-side sessions with idle and absolute timeouts."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.db import utcnow
from console.errors import Forbidden, Unauthorized
from console.identity import throttle
from console.identity.models import Membership, Team, User, WebSession
from console.identity.passwords import decoy_hash, verify_password
from console.identity.viewer import Viewer
from console.transactions import keep_writes

GENERIC_FAILURE = "Wrong user name or password."
LAST_SEEN_RESOLUTION = timedelta(seconds=60)
# An ended session keeps nothing a person sent (see identity/kept_forms.py).
_FORGET = {"kept_form_for": None, "kept_form_json": None, "kept_form_at": None}


@dataclass(frozen=True)
class SessionPolicy:
    idle: timedelta = timedelta(minutes=30)
    absolute: timedelta = timedelta(hours=12)
    account_from_client: throttle.Limit = throttle.ACCOUNT_FROM_CLIENT
    client: throttle.Limit = throttle.CLIENT
    step_up: throttle.Limit = throttle.SESSION


@dataclass(frozen=True)
class SignedIn:
    """A live browser session: the cookie token (only here, never stored) and who it belongs to."""

    token: str
    csrf_token: str
    viewer: Viewer


def _session_id(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def begin_sign_in(
    *, session: AsyncSession, name: str, client: str, policy: SessionPolicy, now: datetime | None = None
) -> throttle.Attempt:
    """A password sign-in's first unit of work: record the attempt, which `sign_in` counts once it
    committed (see throttle.py)."""
    limits = _sign_in_limits(name, client, policy)
    return await throttle.record_attempt(session=session, limits=limits, now=now or utcnow())


async def sign_in(
    *,
    session: AsyncSession,
    attempt: throttle.Attempt,
    name: str,
    password: str,
    client: str,
    policy: SessionPolicy,
) -> SignedIn:
    """Check the password of an attempt `begin_sign_in` recorded and open a session.

    Failures slow down further attempts at this account from this client, and from this client at
    any account (see throttle.py); they never slow the account's owner on another client.

    Raises:
        TooManyAttempts: a wait is due after recent failures (nothing is checked).
        Unauthorized: wrong name or password (the message never says which).
        Both with `keep_writes`: the failure is recorded.
    """
    limits = _sign_in_limits(name, client, policy)
    await throttle.check_attempt(session=session, attempt=attempt, limits=limits)
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    # An unknown user costs the same scrypt work as a known one.
    stored = user.password_hash if user is not None and user.password_hash else decoy_hash()
    if not verify_password(password, stored) or user is None or not user.password_hash:
        record_event(
            session=session,
            actor=SYSTEM,
            action="sign_in_failed",
            subject_type="user",
            subject_id=user.id if user else "-",
            payload={"name": name[:100], "client": client},
        )
        raise keep_writes(session, Unauthorized(GENERIC_FAILURE))
    forget = throttle.account_from_client(name, client)
    await throttle.succeeded(session=session, attempt=attempt, forget=forget)
    return await open_session(session=session, user=user, method="password", client=client)


def _sign_in_limits(name: str, client: str, policy: SessionPolicy) -> dict[str, throttle.Limit]:
    return {
        throttle.account_from_client(name, client): policy.account_from_client,
        throttle.from_client(client): policy.client,
    }


async def open_session(*, session: AsyncSession, user: User, method: str, client: str) -> SignedIn:
    """Start a browser session for a person who just proved who they are."""
    now = utcnow()
    token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    web_id = _session_id(token)
    session.add(
        WebSession(
            id=web_id,
            user_id=user.id,
            csrf_token=csrf,
            created_at=now,
            last_seen_at=now,
            authenticated_at=now,
            auth_method=method,
        )
    )
    record_event(
        session=session,
        actor=Actor("user", user.id),
        action="signed_in",
        subject_type="user",
        subject_id=user.id,
        payload={"client": client, "method": method},
    )
    return SignedIn(token, csrf, await _viewer(session, user, via="session", web_session_id=web_id))


async def begin_reauthentication(
    *, session: AsyncSession, web_session_id: str, policy: SessionPolicy, now: datetime | None = None
) -> throttle.Attempt:
    """A step-up's first unit of work: record the attempt of a live session, which `reauthenticate`
    counts once it committed. Only this session's own failures slow it down: guessing at the account
    elsewhere never blocks the person who is signed in.

    Raises:
        Unauthorized: the session ended.
    """
    web, _user = await _live_session(session, web_session_id)
    limits = {throttle.of_session(web.id): policy.step_up}
    return await throttle.record_attempt(session=session, limits=limits, now=now or utcnow())


async def reauthenticate(
    *,
    session: AsyncSession,
    attempt: throttle.Attempt,
    web_session_id: str,
    password: str,
    client: str,
    policy: SessionPolicy,
) -> None:
    """Check the password of a signed-in person again (an attempt `begin_reauthentication` recorded) and
    mark the session as freshly authenticated.

    Raises:
        TooManyAttempts: a wait is due after this session's recent failures.
        Unauthorized: wrong password, or the session ended.
        Both with `keep_writes`, but for an ended session: the failure is recorded.
    """
    web, user = await _live_session(session, web_session_id)
    key = throttle.of_session(web.id)
    await throttle.check_attempt(session=session, attempt=attempt, limits={key: policy.step_up})
    if not verify_password(password, user.password_hash or decoy_hash()) or not user.password_hash:
        record_event(
            session=session,
            actor=Actor("user", user.id),
            action="sign_in_failed",
            subject_type="user",
            subject_id=user.id,
            payload={"client": client, "method": "password", "reason": "wrong_password", "step_up": True},
        )
        raise keep_writes(session, Unauthorized("Wrong password."))
    await throttle.succeeded(session=session, attempt=attempt, forget=key)
    await mark_reauthenticated(session=session, web_session_id=web.id, method="password", client=client)


async def mark_reauthenticated(
    *, session: AsyncSession, web_session_id: str, method: str, client: str
) -> None:
    """The person behind a live session just proved again who they are; step-up checks read the time."""
    web, user = await _live_session(session, web_session_id)
    await session.execute(
        update(WebSession)
        .where(WebSession.id == web.id)
        .values(authenticated_at=utcnow(), auth_method=method)
    )
    record_event(
        session=session,
        actor=Actor("user", user.id),
        action="reauthenticated",
        subject_type="user",
        subject_id=user.id,
        payload={"client": client, "method": method},
    )


async def reauthentication_method(
    *, session: AsyncSession, web_session_id: str, oidc_issuer: str | None
) -> Literal["password", "oidc"]:
    """How the person behind a session proves again who they are: at their provider, or with a password.

    Raises:
        Unauthorized: the session ended.  Forbidden: the account has no way to re-authenticate here.
    """
    _web, user = await _live_session(session, web_session_id)
    if user.oidc_subject is not None and oidc_issuer is not None and user.oidc_issuer == oidc_issuer:
        return "oidc"
    if user.password_hash:
        return "password"
    raise Forbidden("This account cannot confirm its sign-in here: its identity provider is not configured.")


async def _live_session(session: AsyncSession, web_session_id: str) -> tuple[WebSession, User]:
    row = (
        await session.execute(
            select(WebSession, User)
            .join(User, User.id == WebSession.user_id)
            .where(WebSession.id == web_session_id, WebSession.revoked_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        raise Unauthorized("The session ended; sign in again.")
    web, user = row
    return web, user


async def resolve(*, session: AsyncSession, token: str, policy: SessionPolicy) -> SignedIn | None:
    """The live session for a cookie token, or None when unknown, revoked, idle or too old."""
    now = utcnow()
    row = (
        await session.execute(
            select(WebSession, User)
            .join(User, User.id == WebSession.user_id)
            .where(WebSession.id == _session_id(token), WebSession.revoked_at.is_(None))
        )
    ).one_or_none()
    if row is None:
        return None
    web, user = row
    if now - web.last_seen_at > policy.idle or now - web.created_at > policy.absolute:
        await session.execute(
            update(WebSession).where(WebSession.id == web.id).values(revoked_at=now, **_FORGET)
        )
        return None
    if now - web.last_seen_at > LAST_SEEN_RESOLUTION:
        await session.execute(update(WebSession).where(WebSession.id == web.id).values(last_seen_at=now))
    viewer = await _viewer(session, user, via="session", web_session_id=web.id)
    return SignedIn(token, web.csrf_token, viewer)


async def authenticated_at(*, session: AsyncSession, web_session_id: str | None) -> datetime | None:
    """When the person behind a live browser session last proved who they are (None for API tokens).

    Reads inside the caller's transaction: a decision checks step-up where it decides.
    """
    if web_session_id is None:
        return None
    query = select(WebSession.authenticated_at).where(
        WebSession.id == web_session_id, WebSession.revoked_at.is_(None)
    )
    return (await session.execute(query)).scalar_one_or_none()


async def signed_in_at(*, session: AsyncSession, web_session_id: str | None) -> datetime | None:
    """`authenticated_at`, for a page that shows whether a step-up is due."""
    moment = await authenticated_at(session=session, web_session_id=web_session_id)
    return moment


async def sign_out(*, session: AsyncSession, token: str) -> None:
    """Revoke the session server-side; the cookie is worthless afterwards."""
    web = await session.get(WebSession, _session_id(token))
    if web is not None and web.revoked_at is None:
        await session.execute(
            update(WebSession).where(WebSession.id == web.id).values(revoked_at=utcnow(), **_FORGET)
        )
        record_event(
            session=session,
            actor=Actor("user", web.user_id),
            action="signed_out",
            subject_type="user",
            subject_id=web.user_id,
        )


async def _viewer(session: AsyncSession, user: User, *, via: str, web_session_id: str) -> Viewer:
    rows = (
        await session.execute(
            select(Membership.team_id, Membership.role, Team.name)
            .join(Team, Team.id == Membership.team_id)
            .where(Membership.user_id == user.id)
        )
    ).all()
    return Viewer(
        user.id,
        user.name,
        {t: r for t, r, _ in rows},
        {t: n for t, _, n in rows},
        via,
        web_session_id=web_session_id,
        site_admin=user.site_admin,
    )
