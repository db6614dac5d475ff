"""A person connects their account at an MCP server's authorization server: the authorization code flow
with PKCE (S256), `resource` (RFC 8707) on every request, and `state` bound to the person and their browser.

`begin` discovers the authorization server, settles the console's client identity there and returns the
authorization URL plus a browser key (the web layer keeps it in a cookie); `finish` takes what the
authorization server sent back to the callback, checks it (state, person, browser, RFC 9207 `iss`),
exchanges the code and stores the grant. Each refusal is audited with a short reason.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import NoReturn
from urllib.parse import urlsplit

import httpx2
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from sqlalchemy import delete
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.db import utcnow
from console.mcp.challenge import Challenge
from console.mcp.dpop import new_key
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.clients import ClientIdentity, ClientSite, client_for, forget_registration
from console.oauth.discovery import discover, union_scopes
from console.oauth.errors import OAuthRefused
from console.oauth.grants import Terms, client_id_param, granted_scope, oauth_client, save_grant, tokens_of
from console.oauth.http import Reach
from console.oauth.models import OAuthAttempt
from console.oauth.resource_indicator import indicator_of, resource_param
from console.transactions import keep_writes

ATTEMPT_MINUTES = 15
MAX_PARAM_CHARS = 4096
REFUSES_RESOURCE = (
    " It refuses the resource parameter (RFC 8707), as Microsoft Entra ID does: a team admin can set the "
    "server to omit it (and give its Application ID URI)."
)


@dataclass(frozen=True)
class Authorization:
    """An authorization sent to the person's browser."""

    url: str  # where the browser goes: the authorization server's page
    browser_key: str  # kept by the browser (a cookie); `finish` wants it back
    auth_host: str  # the authorization server's host, for "you will sign in at ..."
    scope: str | None  # what is asked for


@dataclass(frozen=True)
class Returned:
    """The query the authorization server sent the browser back with (RFC 6749 section 4.1.2, RFC 9207)."""

    state: str | None = None
    code: str | None = None
    iss: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Connected:
    server_id: str
    issuer: str
    scope: str | None


@dataclass(frozen=True)
class _Plan:
    code_verifier: str
    terms: Terms
    scope: str | None
    iss_parameter: bool
    redirect_uri: str
    client_secret: str | None
    dpop_key: str | None = None  # the key the grant is bound to, where the authorization server takes DPoP


async def begin(
    *,
    session: AsyncSession,
    outbound: Outbound,
    site: ClientSite,
    server: McpServer,
    user_id: str,
    challenge: Challenge | None,
) -> Authorization:
    """Start an authorization of `server` for the person; the attempt is recorded.

    A step-up (`challenge` says insufficient_scope) asks for the scopes already granted and the new ones.

    Raises:
        OAuthRefused: discovery or client registration failed, or the authorization server lacks PKCE.
    """
    cipher, reach = outbound.cipher, Reach.of(server, outbound)
    try:
        async with reach.client() as http:
            found = await discover(http, server.url or "", challenge, indicator_of(server))
            scope = found.scope
            if challenge is not None and challenge.insufficient_scope:
                held = await granted_scope(session=session, user_id=user_id, server_id=server.id)
                scope = union_scopes(held, scope) or None
            client = await client_for(
                session=session,
                http=http,
                cipher=cipher,
                server=server,
                auth_server=found.auth_server,
                site=site,
                scope=scope,
            )
    except OAuthRefused as refused:
        await _refuse(session, user_id, server.id, refused.reason, refused.message)
    verifier = generate_token(48)
    state = secrets.token_urlsafe(32)
    browser_key = secrets.token_urlsafe(32)
    redirect = site.redirect_uri
    extra = resource_param(found.resource, omitted=found.omit_resource)
    if scope is not None and "offline_access" in scope.split():
        extra["prompt"] = "consent"  # OpenID Connect asks for it with offline_access
    async with oauth_client(client, redirect, reach, scope) as oauth:
        url, _ = oauth.create_authorization_url(
            found.auth_server.authorization_endpoint, state=state, code_verifier=verifier, **extra
        )
    terms = Terms.of(found, client)
    dpop_key = new_key() if found.auth_server.dpop else None
    plan = _Plan(
        verifier, terms, scope, found.auth_server.iss_parameter, redirect, client.client_secret, dpop_key
    )
    attempt_id = _digest(state)
    await session.execute(delete(OAuthAttempt).where(OAuthAttempt.expires_at < utcnow()))  # abandoned ones
    session.add(
        OAuthAttempt(
            id=attempt_id,
            user_id=user_id,
            server_id=server.id,
            browser_digest=_digest(browser_key),
            issuer=terms.issuer[:500],
            plan=cipher.seal_bound(json.dumps(asdict(plan)), _attempt_binding(attempt_id)),
            expires_at=utcnow() + timedelta(minutes=ATTEMPT_MINUTES),
        )
    )
    record_event(
        session=session,
        actor=Actor("user", user_id),
        action="oauth_started",
        subject_type="server",
        subject_id=server.id,
        payload={"issuer": terms.issuer, "scope": scope or "", "client": client.source},
    )
    return Authorization(
        str(url), browser_key, urlsplit(found.auth_server.authorization_endpoint).netloc, scope
    )


async def finish(
    *,
    session: AsyncSession,
    outbound: Outbound,
    site: ClientSite,
    user_id: str,
    browser_key: str | None,
    returned: Returned,
) -> Connected:
    """Check what came back to the callback, exchange the code and store the person's grant.

    Raises:
        OAuthRefused: an unknown, expired, used or someone else's `state`, another browser, an
            authorization server that said no, a wrong or missing `iss`, or a refused code. Each is
            audited (as `oauth_refused`, with the reason) before it is raised.
    """
    state = _bounded(returned.state)
    attempt = await session.get(OAuthAttempt, _digest(state)) if state else None
    if attempt is None:
        await _refuse(
            session, user_id, None, "state_unknown", "This sign-in link is unknown or was already used."
        )
    server_id, issuer = attempt.server_id, attempt.issuer
    if attempt.user_id != user_id:
        # Someone else's attempt: left for its owner, refused for this person.
        await _refuse(
            session, user_id, server_id, "state_other_user", "This sign-in was started by someone else."
        )
    await session.execute(delete(OAuthAttempt).where(OAuthAttempt.id == attempt.id))  # single use
    if attempt.expires_at < utcnow():
        await _refuse_used(
            session, user_id, server_id, "state_expired", "This sign-in took too long; start it again."
        )
    if not browser_key or not hmac.compare_digest(_digest(browser_key), attempt.browser_digest):
        await _refuse_used(
            session, user_id, server_id, "state_other_browser", "This sign-in was started in another browser."
        )
    cipher = outbound.cipher
    plan = _plan_of(cipher.open_bound(attempt.plan, _attempt_binding(attempt.id)))
    server = await session.get(McpServer, server_id)
    if server is None or server.credential_mode != "oauth":
        await _refuse_used(
            session, user_id, server_id, "server_changed", "This server no longer signs in with OAuth."
        )
    reach = Reach.of(server, outbound)
    if returned.error is not None:
        said = "".join(c for c in returned.error[:60] if c.isalnum() or c in "_-")
        await _refuse_used(
            session,
            user_id,
            server_id,
            "authorization_denied",
            f"The authorization server said no ({said}).{_why_refused(said)}",
        )
    iss = _bounded(returned.iss)
    if iss is not None and iss != plan.terms.issuer:
        await _refuse_used(
            session,
            user_id,
            server_id,
            "issuer_mismatch",
            "The answer came from another authorization server than the one asked (RFC 9207 iss).",
        )
    if iss is None and plan.iss_parameter:
        await _refuse_used(
            session,
            user_id,
            server_id,
            "issuer_missing",
            "The authorization server promised to name itself (RFC 9207 iss) and did not.",
        )
    code = _bounded(returned.code)
    if not code:
        await _refuse_used(
            session, user_id, server_id, "code_missing", "The authorization server sent no code."
        )
    client = ClientIdentity(
        plan.terms.client_id, plan.client_secret, plan.terms.auth_method, plan.terms.client_source
    )
    try:
        async with oauth_client(client, plan.redirect_uri, reach, plan.scope, plan.dpop_key) as oauth:
            answer = await oauth.fetch_token(
                plan.terms.token_endpoint,
                grant_type="authorization_code",
                code=code,
                code_verifier=plan.code_verifier,
                **resource_param(plan.terms.resource, omitted=bool(plan.terms.omit_resource)),
                **client_id_param(client),
            )
        tokens = tokens_of(answer, plan.scope, dpop_key=plan.dpop_key)
    except (OAuthError, OAuthRefused, httpx2.HTTPError, ValueError) as exc:
        if (
            plan.terms.client_source == "registered"
            and isinstance(exc, OAuthError)
            and exc.error == "invalid_client"
        ):
            await forget_registration(session=session, issuer=issuer, redirect=plan.redirect_uri)
        error_code = exc.error if isinstance(exc, OAuthError) else None
        await _refuse_used(
            session,
            user_id,
            server_id,
            "code_rejected",
            f"The authorization server did not accept the sign-in.{_why_refused(error_code)}",
        )
    await save_grant(
        session=session,
        cipher=cipher,
        actor=Actor("user", user_id),
        user_id=user_id,
        server_id=server_id,
        tokens=tokens,
        terms=plan.terms,
    )
    return Connected(server_id, issuer, tokens.scope)


async def _refuse(
    session: AsyncSession, user_id: str, server_id: str | None, reason: str, message: str
) -> NoReturn:
    """Audit the refusal and raise it, before anything else was written (`keep_writes`: the record
    commits)."""
    _record_refusal(session, user_id, server_id, reason)
    raise keep_writes(session, OAuthRefused(reason, message))


async def _refuse_used(
    session: AsyncSession, user_id: str, server_id: str, reason: str, message: str
) -> NoReturn:
    """Audit the refusal and raise it; the attempt stays used up (its deletion commits with the record,
    `keep_writes`)."""
    _record_refusal(session, user_id, server_id, reason)
    raise keep_writes(session, OAuthRefused(reason, message))


def _record_refusal(session: AsyncSession, user_id: str, server_id: str | None, reason: str) -> None:
    record_event(
        session=session,
        actor=Actor("user", user_id),
        action="oauth_refused",
        subject_type="server" if server_id else "user",
        subject_id=server_id or user_id,
        payload={"reason": reason},
    )


def _why_refused(error: str | None) -> str:
    """What a person can do about the authorization server's error, when the console knows."""
    return REFUSES_RESOURCE if error == "invalid_target" else ""


def _plan_of(text: str) -> _Plan:
    raw = json.loads(text)
    return _Plan(**{**raw, "terms": Terms(**raw["terms"])})


def _bounded(value: str | None) -> str | None:
    return value if value is not None and len(value) <= MAX_PARAM_CHARS else None


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _attempt_binding(attempt_id: str) -> str:
    return f"oauth-attempt:{attempt_id}"
