"""Signing in (and re-authenticating) through the OpenID provider: the code flow with PKCE, state and nonce.

A started sign-in is an `OidcLogin` row keyed by the SHA-256 of its `state`; the same `state` goes into
a short-lived cookie in the browser that started it, so a callback only counts in that browser (no
login CSRF). The row is deleted the moment a callback presents its state: one use, even on failure.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NoReturn

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.db import utcnow
from console.identity.credentials import CredentialCipher, SecretMissing
from console.identity.models import OidcLogin, User, WebSession
from console.identity.oidc_accounts import find_or_create_user, parse_teams_claim, sync_memberships
from console.identity.oidc_client import OidcClient, OidcError
from console.identity.sessions import SignedIn, mark_reauthenticated, open_session
from console.identity.sso_assertions import keep_assertion
from console.transactions import keep_writes

STATE_TTL = timedelta(minutes=10)
EXPIRED = "The sign-in took too long or was already used. Start it again."
NOT_YOURS = "This sign-in was not started in this browser. Start it again."


@dataclass(frozen=True)
class Started:
    """A sign-in on its way to the provider: `state` also goes into the browser-binding cookie."""

    state: str
    url: str


@dataclass(frozen=True)
class Callback:
    """What the provider's redirect carried (untrusted, each value at most a few KiB)."""

    state: str | None
    code: str | None
    iss: str | None
    error: str | None


@dataclass(frozen=True)
class Finished:
    """Where to go next, and the new session (None after a re-authentication: the session stays)."""

    next_path: str
    signed_in: SignedIn | None


def state_hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


async def start_login(
    *,
    session: AsyncSession,
    client: OidcClient,
    next_path: str,
    client_address: str,
    web_session_id: str | None = None,
) -> Started:
    """Record a new sign-in (or, with `web_session_id`, a re-authentication) and build the provider URL.

    Raises:
        OidcError: the provider's discovery document could not be used (recorded, `keep_writes`).
    """
    state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
    try:
        url = await client.authorization_url(
            state=state, nonce=nonce, code_verifier=verifier, reauthenticate=web_session_id is not None
        )
    except OidcError as exc:
        _failed(session, exc, client_address)
    now = utcnow()
    await session.execute(delete(OidcLogin).where(OidcLogin.created_at < now - STATE_TTL))
    session.add(
        OidcLogin(
            id=state_hash(state),
            nonce=nonce,
            code_verifier=verifier,
            next_path=next_path,
            web_session_id=web_session_id,
            created_at=now,
        )
    )
    return Started(state, url)


async def spend_state(
    *, session: AsyncSession, callback: Callback, bound_state: str | None, client_address: str
) -> OidcLogin:
    """A callback's first unit of work: the sign-in its state names, spent once presented whatever follows
    (committed before the provider is asked).

    Raises:
        OidcError: no such sign-in, or not this browser's; the reason is in the audit log (`keep_writes`).
    """
    try:
        return await _consume(session, callback, bound_state)
    except OidcError as exc:
        _failed(session, exc, client_address)


async def finish_login(
    *,
    session: AsyncSession,
    client: OidcClient,
    callback: Callback,
    login: OidcLogin,
    current_web_session_id: str | None,
    teams_claim: str | None,
    client_address: str,
    cipher: CredentialCipher,
) -> Finished:
    """Check the provider's answer to the sign-in `spend_state` found and open a session (or refresh the
    current one's authentication); the ID token is kept, sealed, for enterprise-managed authorization
    (console/identity/sso_assertions.py).

    Raises:
        OidcError: any check failed; the reason is in the audit log (`keep_writes`) and no session was
        opened.
    """
    try:
        id_token, claims = await _verified_claims(client, callback, login)
    except OidcError as exc:
        _failed(session, exc, client_address)
    issuer = client.config.issuer
    if login.web_session_id is not None:
        try:
            await _check_same_person(session, login, current_web_session_id, issuer, claims)
        except OidcError as exc:
            _failed(session, exc, client_address, login.web_session_id)
        await _keep(session, cipher, await _user_of(session, login.web_session_id), issuer, id_token, claims)
        await mark_reauthenticated(
            session=session, web_session_id=login.web_session_id, method="oidc", client=client_address
        )
        return Finished(login.next_path, None)
    user = await find_or_create_user(session=session, issuer=issuer, claims=claims)
    if teams_claim:
        await sync_memberships(session=session, user=user, wanted=parse_teams_claim(claims.get(teams_claim)))
    await _keep(session, cipher, user.id, issuer, id_token, claims)
    signed_in = await open_session(session=session, user=user, method="oidc", client=client_address)
    return Finished(login.next_path, signed_in)


async def _keep(
    session: AsyncSession,
    cipher: CredentialCipher,
    user_id: str,
    issuer: str,
    id_token: str,
    claims: dict[str, object],
) -> None:
    expires = claims["exp"]  # checked present and current by the client's verify()
    assert isinstance(expires, int | float)  # noqa: S101  # ditto
    try:
        await keep_assertion(
            session=session,
            cipher=cipher,
            user_id=user_id,
            issuer=issuer,
            id_token=id_token,
            expires_at=datetime.fromtimestamp(expires, UTC),
        )
    except SecretMissing:
        return  # without a console secret nothing is sealed, and enterprise connections are unavailable


async def _user_of(session: AsyncSession, web_session_id: str) -> str:
    row = await session.get(WebSession, web_session_id)
    assert row is not None  # noqa: S101  # _check_same_person found it
    return row.user_id


async def _consume(session: AsyncSession, callback: Callback, bound_state: str | None) -> OidcLogin:
    if callback.error is not None:
        reason = callback.error if callback.error.replace("_", "").isalnum() else "unreadable"
        raise OidcError(f"provider_error:{reason[:40]}", "The identity provider refused the sign-in.")
    if not callback.state:
        raise OidcError("missing_state", EXPIRED)
    if not bound_state:
        raise OidcError("missing_browser_binding", NOT_YOURS)
    wanted = state_hash(callback.state)
    if not hmac.compare_digest(state_hash(bound_state), wanted):
        raise OidcError("browser_binding_mismatch", NOT_YOURS)
    login = (
        await session.execute(delete(OidcLogin).where(OidcLogin.id == wanted).returning(OidcLogin))
    ).scalar_one_or_none()
    if login is None:
        raise OidcError("unknown_state", EXPIRED)
    if utcnow() - login.created_at > STATE_TTL:
        raise OidcError("expired_state", EXPIRED)
    return login


async def _verified_claims(
    client: OidcClient, callback: Callback, login: OidcLogin
) -> tuple[str, dict[str, object]]:
    """The ID token and its claims, once they pass every check."""
    # RFC 9207: a provider that names itself must be ours (a mix-up attack sends our state elsewhere).
    if callback.iss is not None and callback.iss != client.config.issuer:
        raise OidcError("callback_issuer_mismatch", EXPIRED)
    if not callback.code:
        raise OidcError("missing_code", EXPIRED)
    id_token = await client.exchange(code=callback.code, code_verifier=login.code_verifier)
    return id_token, await client.verify(id_token, nonce=login.nonce)


async def _check_same_person(
    session: AsyncSession,
    login: OidcLogin,
    current_web_session_id: str | None,
    issuer: str,
    claims: dict[str, object],
) -> None:
    """Raises OidcError unless the answer confirms the person of the session that asked, just now."""
    if current_web_session_id is None or not hmac.compare_digest(
        current_web_session_id.encode(), str(login.web_session_id).encode()
    ):
        raise OidcError("reauth_session_changed", "Your session changed during the confirmation. Try again.")
    row = (
        await session.execute(
            select(User)
            .join(WebSession, WebSession.user_id == User.id)
            .where(WebSession.id == login.web_session_id, WebSession.revoked_at.is_(None))
        )
    ).scalar_one_or_none()
    if row is None:
        raise OidcError("reauth_session_ended", "Your session ended; sign in again.")
    if row.oidc_issuer != issuer or row.oidc_subject != claims.get("sub"):
        raise OidcError("reauth_other_account", "You confirmed with a different account. Try again.")
    auth_time = claims.get("auth_time")
    started = int(login.created_at.timestamp())
    if not isinstance(auth_time, int) or isinstance(auth_time, bool) or auth_time < started:
        raise OidcError("reauth_not_fresh", "The identity provider did not ask you to sign in again.")


def _failed(
    session: AsyncSession, exc: OidcError, client_address: str, web_session_id: str | None = None
) -> NoReturn:
    """Record the failed sign-in and raise: the record commits (`keep_writes`), and nothing of the
    sign-in was written before it but the spent state."""
    payload = {"method": "oidc", "reason": exc.reason, "client": client_address}
    if web_session_id is not None:
        payload["step_up"] = "true"
    record_event(
        session=session,
        actor=SYSTEM,
        action="sign_in_failed",
        subject_type="user",
        subject_id="-",
        payload=payload,
    )
    raise keep_writes(session, exc)
