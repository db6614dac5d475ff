"""A team account at an MCP server: one OAuth token for every member's calls, which the console gets by
itself with the client credentials grant (the MCP OAuth client-credentials extension) — the client an admin
registered, authenticated with its secret (client_secret_basic or _post, as advertised) or with a JWT
assertion signed by its private key (private_key_jwt, RFC 7523, `aud` the authorization server's issuer);
or, with workload identity federation, the JWT bearer grant (RFC 7523 section 2.1) presenting the identity
token the platform issued the console (a file it keeps fresh, read at each request).

The token is sealed on the server's row (bound to the server) and fetched again when it is about to expire
or the server refused it; no person is involved.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict

import httpx2
from authlib.integrations.base_client.errors import OAuthError
from authlib.oauth2.rfc7523 import PrivateKeyJWT
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.mcp.admin import private_key
from console.mcp.models import McpServer
from console.mcp.sealed import OAuthClientEntry, Outbound, open_oauth_client, open_values, seal_value
from console.oauth.clients import ClientIdentity, auth_method_for
from console.oauth.discovery import Discovered, discover
from console.oauth.errors import OAuthRefused
from console.oauth.grants import REFRESH_AHEAD_SECONDS, Tokens, client_id_param, oauth_client, tokens_of
from console.oauth.http import Reach
from console.oauth.jwt_bearer import present_assertion
from console.oauth.resource_indicator import indicator_of, resource_param

GRANT = "team_grant"
MAX_WORKLOAD_TOKEN = 64 * 1024  # bytes of a workload identity token file read
KEY_ALGORITHMS = {"EC": "ES256", "RSA": "RS256", "OKP": "EdDSA"}


async def team_bearer(
    *, session: AsyncSession, outbound: Outbound, server: McpServer, force_refresh: bool = False
) -> str | None:
    """The team account's access token, fetched anew when there is none, it is about to expire, or
    `force_refresh`; None when the server has no client to get one with, or the authorization server
    refused (the call then fails saying so, and the refusal is audited). What it fetched is written in
    the caller's transaction."""
    held = _held(outbound, server)
    fresh = held is not None and (
        held.expires_at is None or held.expires_at - time.time() >= REFRESH_AHEAD_SECONDS
    )
    if held is not None and fresh and not force_refresh:
        return held.access_token
    entered = open_oauth_client(outbound.cipher, server)
    if entered is None:
        return None
    try:
        tokens = await _fetch(outbound, server, entered)
    except OAuthRefused as refused:
        record_event(
            session=session,
            actor=SYSTEM,
            action="oauth_refused",
            subject_type="server",
            subject_id=server.id,
            payload={"reason": refused.reason, "account": "team"},
        )
        server.team_grant = None
        return None
    server.team_grant = json.dumps(
        seal_value(outbound.cipher, server.id, "oauth", GRANT, json.dumps(asdict(tokens)))
    )
    record_event(
        session=session,
        actor=SYSTEM,
        action="oauth_team_token",
        subject_type="server",
        subject_id=server.id,
        payload={"scope": tokens.scope or ""},
    )
    return tokens.access_token


def _held(outbound: Outbound, server: McpServer) -> Tokens | None:
    if not server.team_grant:
        return None
    plain = open_values(outbound.cipher, server.id, "oauth", {GRANT: json.loads(server.team_grant)})[GRANT]
    return Tokens(**json.loads(plain))


async def _fetch(outbound: Outbound, server: McpServer, entered: OAuthClientEntry) -> Tokens:
    reach = Reach.of(server, outbound)
    async with reach.client() as http:
        found = await discover(http, server.url or "", None, indicator_of(server))
    if entered.workload_token_file is not None:
        return await _fetch_as_workload(reach, found, entered.client_id, entered.workload_token_file)
    client_id, secret = entered.client_id, entered.secret
    key = private_key(entered.private_key) if entered.private_key is not None else None
    auth_server = found.auth_server
    if key is not None:
        client = ClientIdentity(client_id, None, "private_key_jwt", "pre_registered")
    else:
        client = ClientIdentity(client_id, secret, auth_method_for(auth_server, secret), "pre_registered")
    try:
        async with oauth_client(client, None, reach, found.scope) as oauth:
            if key is not None:
                # Signed with the client's key; `aud` is the issuer (the extension's rule, not the URL).
                oauth.client_secret = key
                oauth.register_client_auth_method(
                    PrivateKeyJWT(auth_server.issuer, alg=KEY_ALGORITHMS[key.key_type])
                )
            answer = await oauth.fetch_token(
                auth_server.token_endpoint,
                grant_type="client_credentials",
                **resource_param(found.resource, omitted=found.omit_resource),
                **client_id_param(client),
            )
    except (OAuthError, httpx2.HTTPError, ValueError):
        raise OAuthRefused(
            "client_credentials_rejected",
            f"the authorization server {auth_server.issuer[:300]} refused the team account's client "
            "credentials",
        ) from None
    return tokens_of(answer, found.scope)


async def _fetch_as_workload(reach: Reach, found: Discovered, client_id: str, token_file: str) -> Tokens:
    """The JWT bearer grant with the workload's identity token as the assertion."""
    client = ClientIdentity(client_id, None, "none", "pre_registered")
    return await present_assertion(
        reach, client, found, _workload_token(token_file), what="the workload identity token"
    )


def _workload_token(path: str) -> str:
    """The identity token the platform keeps in `path` (it rotates: read anew each time)."""
    try:
        with open(path, "rb") as file:
            text = file.read(MAX_WORKLOAD_TOKEN + 1)
    except OSError as exc:
        raise OAuthRefused(
            "workload_token_unreadable", f"cannot read the workload identity token: {exc.strerror}"
        ) from None
    token = text.decode("ascii", "replace").strip()
    if len(text) > MAX_WORKLOAD_TOKEN or not token or any(c.isspace() for c in token):
        raise OAuthRefused(
            "workload_token_unreadable", "the workload identity token file does not hold one token"
        )
    return token
