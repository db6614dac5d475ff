"""People's OAuth grants for MCP servers: the access and refresh tokens, sealed in their
`identity_server_credential` row (kind "oauth", bound to the user and server), refreshed shortly before
they expire or when the server refuses them, and revoked (RFC 7009) on disconnect.

Token values never leave this module but as the bearer a call's endpoint carries; `details_json` holds
only what a person may see on their Connections page (issuer, scopes, expiry, last use) and what a
refresh needs (endpoints, resource, which client).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx2
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.db import utcnow
from console.identity.credentials import CredentialCipher
from console.identity.models import ServerCredential
from console.mcp.dpop import DPoPTransport
from console.mcp.models import McpServer
from console.mcp.sealed import open_oauth_client
from console.oauth.clients import ClientIdentity, registered_secret
from console.oauth.discovery import Discovered
from console.oauth.errors import OAuthRefused
from console.oauth.http import TIMEOUT_SECONDS, Reach
from console.oauth.models import OAuthClient
from console.oauth.resource_indicator import resource_param

KIND = "oauth"
REFRESH_AHEAD_SECONDS = 60.0  # a token this close to its expiry is refreshed before it is used
MAX_TOKEN_CHARS = 16_384
LAST_USED_GRAIN_SECONDS = 60.0
# What an authorization server answers when a grant is gone for good (RFC 6749 section 5.2).
REFUSALS = ("invalid_grant", "invalid_client", "unauthorized_client", "invalid_scope")


@dataclass(frozen=True)
class Tokens:
    access_token: str
    refresh_token: str | None
    expires_at: float | None  # seconds since the epoch
    scope: str | None
    dpop_key: str | None = None  # the private JWK the tokens are bound to (DPoP, RFC 9449), if they are


@dataclass(frozen=True)
class AccessToken:
    """What a request presents: the token, and the key that proves it is ours when it is DPoP-bound."""

    token: str
    dpop_key: str | None = None


@dataclass(frozen=True)
class Terms:
    """What a grant was given for and how to renew it (no secrets)."""

    issuer: str
    token_endpoint: str
    revocation_endpoint: str | None
    resource: str
    client_id: str
    client_source: str  # pre_registered | metadata_document | registered
    auth_method: str
    client_row: str | None = None  # the oauth_client row of a registered client
    omit_resource: bool = False  # its requests leave `resource` out (resource_indicator.py)

    @classmethod
    def of(cls, found: Discovered, client: ClientIdentity) -> Terms:
        """The terms of a grant from `found`'s authorization server to `client`."""
        auth = found.auth_server
        return cls(
            issuer=auth.issuer,
            token_endpoint=auth.token_endpoint,
            revocation_endpoint=auth.revocation_endpoint,
            resource=found.resource,
            client_id=client.client_id,
            client_source=client.source,
            auth_method=client.auth_method,
            client_row=client.row_id,
            omit_resource=found.omit_resource,
        )


def oauth_client(
    client: ClientIdentity,
    redirect_uri: str | None,
    reach: Reach,
    scope: str | None = None,
    dpop_key: str | None = None,
) -> AsyncOAuth2Client:
    """Authlib's client for one exchange with the authorization server (PKCE S256, capped responses);
    with `dpop_key`, each request carries a DPoP proof signed with it."""
    transport = reach.transport()
    return AsyncOAuth2Client(
        client_id=client.client_id,
        client_secret=client.client_secret,
        token_endpoint_auth_method=client.auth_method,
        redirect_uri=redirect_uri,
        scope=scope,
        code_challenge_method="S256",
        timeout=TIMEOUT_SECONDS,
        transport=DPoPTransport(transport, dpop_key) if dpop_key else transport,
        follow_redirects=False,
    )


def client_id_param(client: ClientIdentity) -> dict[str, str]:
    """`client_id` for the body of a token request of an authenticating client: some authorization
    servers (the `mcp` SDK's) want it there besides the Basic credentials; Authlib puts it in for a
    public client itself."""
    return {} if client.auth_method == "none" else {"client_id": client.client_id}


def tokens_of(
    answer: Any, asked_scope: str | None, previous: Tokens | None = None, dpop_key: str | None = None
) -> Tokens:
    """The tokens of a token endpoint's answer, checked: a bearer token, or a DPoP-bound one when the
    request proved `dpop_key` (an authorization server may still answer with a bearer token).

    Raises:
        OAuthRefused: no usable access token in it.
    """
    if not isinstance(answer, dict):
        raise OAuthRefused("invalid_token_response", "the token endpoint answered no token")
    access = answer.get("access_token")
    kind = answer.get("token_type")
    if not isinstance(access, str) or not 0 < len(access) <= MAX_TOKEN_CHARS:
        raise OAuthRefused("invalid_token_response", "the token endpoint answered no usable access token")
    bound = dpop_key is not None and isinstance(kind, str) and kind.lower() == "dpop"
    if not bound and (not isinstance(kind, str) or kind.lower() != "bearer"):
        raise OAuthRefused(
            "invalid_token_response", "the token endpoint answered a token that is not a bearer"
        )
    refresh = answer.get("refresh_token")
    if not isinstance(refresh, str) or not 0 < len(refresh) <= MAX_TOKEN_CHARS:
        refresh = previous.refresh_token if previous is not None else None  # RFC 6749 section 6
    expires = answer.get("expires_at")
    scope = answer.get("scope")
    return Tokens(
        access_token=access,
        refresh_token=refresh,
        expires_at=float(expires) if isinstance(expires, int | float) else None,
        scope=scope if isinstance(scope, str) and len(scope) <= 4000 else asked_scope,
        dpop_key=dpop_key if bound else None,
    )


async def save_grant(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    actor: Actor,
    user_id: str,
    server_id: str,
    tokens: Tokens,
    terms: Terms,
) -> None:
    """Store (or replace) the person's grant for the server, inside the caller's transaction."""
    row = await _row(session, user_id, server_id)
    now = utcnow()
    sealed = cipher.seal(json.dumps(asdict(tokens)), user_id=user_id, server_id=server_id)
    details = json.dumps({**asdict(terms), **_shown(tokens)})
    if row is None:
        row = ServerCredential(user_id=user_id, server_id=server_id, kind=KIND, created_at=now)
        session.add(row)
    row.kind, row.sealed, row.details_json, row.updated_at = KIND, sealed, details, now
    record_event(
        session=session,
        actor=actor,
        action="oauth_connected",
        subject_type="server",
        subject_id=server_id,
        payload={"user": user_id, "issuer": terms.issuer, "scope": tokens.scope or ""},
    )


async def bearer_for(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    reach: Reach,
    server: McpServer,
    user_id: str,
    force_refresh: bool = False,
) -> AccessToken | None:
    """The person's access token for the server, refreshed first when it expires within
    `REFRESH_AHEAD_SECONDS` (or `force_refresh`: the server refused it); None when they have no grant
    or the authorization server refused to renew it (the grant is then dropped: they must connect
    again). While the authorization server cannot be reached the grant is kept, and the token sent as
    it is until it has expired.

    A refreshed or dropped grant is written in the caller's transaction, which the caller commits
    before anything else can fail: an authorization server that rotates refresh tokens has already
    forgotten the old one.
    """
    row = await _row(session, user_id, server.id)
    if row is None or row.kind != KIND:
        return None
    tokens = Tokens(**json.loads(cipher.open(row.sealed, user_id=user_id, server_id=server.id)))
    due = tokens.expires_at is not None and tokens.expires_at - time.time() < REFRESH_AHEAD_SECONDS
    if not (due or force_refresh):
        _note_use(row)
        return AccessToken(tokens.access_token, tokens.dpop_key)
    terms = Terms(**_terms_fields(json.loads(row.details_json)))
    renewed = None
    if tokens.refresh_token is not None:
        try:
            renewed = await _refresh(session, cipher, reach, server, terms, tokens)
        except RefreshUnavailable:
            expired = tokens.expires_at is not None and tokens.expires_at <= time.time()
            return None if expired else AccessToken(tokens.access_token, tokens.dpop_key)
    if renewed is None:
        await session.delete(row)
        _record_renewal(session, "oauth_expired", server.id, user_id, terms.issuer)
        return None
    sealed = cipher.seal(json.dumps(asdict(renewed)), user_id=user_id, server_id=server.id)
    row.sealed, row.updated_at = sealed, utcnow()
    row.details_json = json.dumps({**asdict(terms), **_shown(renewed)})
    _note_use(row)
    _record_renewal(session, "oauth_refreshed", server.id, user_id, terms.issuer)
    return AccessToken(renewed.access_token, renewed.dpop_key)


@dataclass(frozen=True)
class GrantFacts:
    """What the person may see of their grant on the Connections page (never a token)."""

    issuer_host: str
    scope: str | None
    expires: datetime | None
    refreshable: bool
    last_used: datetime | None


def grant_facts(row: ServerCredential | None) -> GrantFacts | None:
    if row is None or row.kind != KIND:
        return None
    details = json.loads(row.details_json)
    return GrantFacts(
        issuer_host=urlsplit(str(details.get("issuer") or "")).netloc,
        scope=details.get("scope"),
        expires=_when(details.get("expires")),
        refreshable=bool(details.get("refreshable")),
        last_used=_when(details.get("last_used")),
    )


def _when(text: object) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) else None


async def holds_grant(*, session: AsyncSession, user_id: str, server_id: str) -> bool:
    """Whether the person has an OAuth grant for the server."""
    row = await _row(session, user_id, server_id)
    return row is not None and row.kind == KIND


async def granted_scope(*, session: AsyncSession, user_id: str, server_id: str) -> str | None:
    """The scopes the person's grant for the server holds (for a step-up that keeps them), or None."""
    row = await _row(session, user_id, server_id)
    if row is None or row.kind != KIND:
        return None
    scope = json.loads(row.details_json).get("scope")
    return scope if isinstance(scope, str) else None


async def disconnect(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    reach: Reach,
    actor: Actor,
    server: McpServer,
    user_id: str,
) -> bool:
    """Revoke the person's grant at the authorization server when it offers revocation (RFC 7009), and
    delete it here either way; whether the authorization server confirmed the revocation."""
    row = await _row(session, user_id, server.id)
    if row is None or row.kind != KIND:
        return False
    tokens = Tokens(**json.loads(cipher.open(row.sealed, user_id=user_id, server_id=server.id)))
    terms = Terms(**_terms_fields(json.loads(row.details_json)))
    revoked = False
    if terms.revocation_endpoint is not None:
        client = await _client_of(session, cipher, server, terms)
        token, hint = (
            (tokens.refresh_token, "refresh_token")
            if tokens.refresh_token
            else (tokens.access_token, "access_token")
        )
        revoked = await _revoke(reach, client, terms.revocation_endpoint, token, hint)
    await session.delete(row)
    record_event(
        session=session,
        actor=actor,
        action="oauth_disconnected",
        subject_type="server",
        subject_id=server.id,
        payload={"user": user_id, "issuer": terms.issuer, "revoked": revoked},
    )
    return revoked


async def _revoke(reach: Reach, client: ClientIdentity, endpoint: str, token: str, hint: str) -> bool:
    """Whether the authorization server confirmed the revocation (the client authenticates as at the
    token endpoint)."""
    try:
        async with oauth_client(client, None, reach) as oauth:
            oauth.revocation_endpoint_auth_method = client.auth_method
            response = await oauth.revoke_token(  # type: ignore[no-untyped-call]  # Authlib's, untyped
                endpoint, token=token, token_type_hint=hint, body=urlencode(client_id_param(client))
            )
    except (OAuthError, httpx2.HTTPError, ValueError):
        return False
    return bool(response.status_code == 200)


class RefreshUnavailable(Exception):
    """The authorization server could not be asked (unreachable, or a server error): try again later."""


async def _refresh(
    session: AsyncSession,
    cipher: CredentialCipher,
    reach: Reach,
    server: McpServer,
    terms: Terms,
    tokens: Tokens,
) -> Tokens | None:
    """The renewed tokens, or None when the authorization server refused the refresh token.

    Raises:
        RefreshUnavailable: it could not be asked.
    """
    client = await _client_of(session, cipher, server, terms)
    try:
        async with oauth_client(client, None, reach, dpop_key=tokens.dpop_key) as oauth:
            answer = await oauth.refresh_token(
                terms.token_endpoint,
                refresh_token=tokens.refresh_token,
                **resource_param(terms.resource, omitted=bool(terms.omit_resource)),
                **client_id_param(client),
            )
        return tokens_of(answer, tokens.scope, tokens, tokens.dpop_key)
    except OAuthError as refused:
        if refused.error in REFUSALS:
            return None
        raise RefreshUnavailable(refused.error) from None
    except OAuthRefused:
        return None
    except (httpx2.HTTPError, ValueError) as exc:
        raise RefreshUnavailable(type(exc).__name__) from None


async def _client_of(
    session: AsyncSession, cipher: CredentialCipher, server: McpServer, terms: Terms
) -> ClientIdentity:
    secret: str | None = None
    if terms.client_source == "pre_registered":
        entered = open_oauth_client(cipher, server)
        secret = entered.secret if entered is not None and entered.client_id == terms.client_id else None
    elif terms.client_row is not None:
        row = await session.get(OAuthClient, terms.client_row)
        secret = registered_secret(cipher, row) if row is not None else None
    method = terms.auth_method if secret is not None else "none"
    return ClientIdentity(terms.client_id, secret, method, terms.client_source)


def _record_renewal(session: AsyncSession, action: str, server_id: str, user_id: str, issuer: str) -> None:
    record_event(
        session=session,
        actor=SYSTEM,
        action=action,
        subject_type="server",
        subject_id=server_id,
        payload={"user": user_id, "issuer": issuer},
    )


def _note_use(row: ServerCredential) -> None:
    """Mark the grant used now, at most once a minute (it commits with the caller's transaction)."""
    details = json.loads(row.details_json)
    last = _when(details.get("last_used"))
    now = utcnow()
    if last is None or (now - last).total_seconds() >= LAST_USED_GRAIN_SECONDS:
        row.details_json = json.dumps({**details, "last_used": now.isoformat()})


def _shown(tokens: Tokens) -> dict[str, Any]:
    expires = (
        datetime.fromtimestamp(tokens.expires_at, UTC).isoformat() if tokens.expires_at is not None else None
    )
    return {"scope": tokens.scope, "expires": expires, "refreshable": tokens.refresh_token is not None}


def _terms_fields(details: dict[str, Any]) -> dict[str, Any]:
    return {name: details.get(name) for name in Terms.__dataclass_fields__}


async def _row(session: AsyncSession, user_id: str, server_id: str) -> ServerCredential | None:
    query = select(ServerCredential).where(
        ServerCredential.user_id == user_id, ServerCredential.server_id == server_id
    )
    return (await session.execute(query)).scalar_one_or_none()
