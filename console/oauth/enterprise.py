"""Enterprise-managed authorization (the MCP extension, SEP-990): a person's grant at an MCP server comes
from their organisation's identity provider instead of a consent page.

The console exchanges the ID token of the person's latest single sign-on at the same OpenID provider
for an identity assertion grant (ID-JAG, RFC 8693 token exchange) naming the MCP server's authorization
server and resource, then presents that grant to the authorization server (RFC 7523 JWT bearer) as the
client an admin registered for the server, authenticated with its secret. The tokens are saved as the
person's grant like any other; with no refresh token, the next exchange follows their expiry.

Without a current ID token (it expired, or the person signed in with a password) there is no grant: the
call waits on a connect question, answered by signing in again (console/web/oidc.py).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.identity.oidc_client import OidcClient, OidcError
from console.identity.sso_assertions import current_assertion
from console.mcp.models import McpServer
from console.mcp.sealed import OAuthClientEntry, Outbound, open_oauth_client
from console.oauth.clients import ClientIdentity, auth_method_for
from console.oauth.discovery import Discovered, discover
from console.oauth.errors import OAuthRefused
from console.oauth.grants import (
    AccessToken,
    Terms,
    save_grant,
)
from console.oauth.http import Reach
from console.oauth.jwt_bearer import JWT_BEARER, present_assertion
from console.oauth.resource_indicator import indicator_of


def enterprise_client(outbound: Outbound, server: McpServer) -> OAuthClientEntry | None:
    """The client the server's enterprise-managed grants are presented by, or None when the server does
    not use enterprise-managed authorization (or the console has no single sign-on)."""
    if server.credential_mode != "oauth" or outbound.sso is None:
        return None
    entry = open_oauth_client(outbound.cipher, server)
    return entry if entry is not None and entry.enterprise and entry.secret else None


async def enterprise_grant(
    *, session: AsyncSession, outbound: Outbound, server: McpServer, user_id: str
) -> AccessToken | None:
    """A new grant for the person at an enterprise-managed server, saved as theirs; None when the server
    is not one, the person has no current ID token, or a party refused (audited). Written in the caller's
    transaction."""
    entry = enterprise_client(outbound, server)
    sso = outbound.sso
    if entry is None or sso is None:
        return None
    id_token = await current_assertion(
        session=session, cipher=outbound.cipher, user_id=user_id, issuer=sso.issuer
    )
    if id_token is None:
        return None
    reach = Reach.of(server, outbound)
    try:
        async with reach.client() as http:
            found = await discover(http, server.url or "", None, indicator_of(server))
        grant = await _assertion_grant(OidcClient(sso), id_token, found)
        client = ClientIdentity(entry.client_id, entry.secret, _auth_method(found), "pre_registered")
        tokens = await present_assertion(reach, client, found, grant, what="the identity assertion grant")
    except OAuthRefused as refused:
        record_event(
            session=session,
            actor=SYSTEM,
            action="oauth_refused",
            subject_type="server",
            subject_id=server.id,
            payload={"reason": refused.reason, "user": user_id, "account": "enterprise"},
        )
        return None
    terms = Terms.of(found, client)
    await save_grant(
        session=session,
        cipher=outbound.cipher,
        actor=SYSTEM,
        user_id=user_id,
        server_id=server.id,
        tokens=tokens,
        terms=terms,
    )
    return AccessToken(tokens.access_token)


def _auth_method(found: Discovered) -> str:
    """client_secret_basic where the authorization server takes it: the extension's method, and the one
    a client registered by hand most likely has."""
    methods = found.auth_server.auth_methods
    return (
        "client_secret_basic" if "client_secret_basic" in methods else auth_method_for(found.auth_server, "")
    )


async def _assertion_grant(provider: OidcClient, id_token: str, found: Discovered) -> str:
    """The identity assertion grant for the server's authorization server and resource."""
    grants = found.auth_server.grant_types
    if grants is not None and JWT_BEARER not in grants:
        raise OAuthRefused(
            "jwt_bearer_unsupported",
            f"the authorization server {found.auth_server.issuer[:300]} does not take identity assertion "
            "grants (no JWT bearer grant type)",
        )
    try:
        return await provider.identity_assertion_grant(
            id_token=id_token,
            audience=found.auth_server.issuer,
            resource=found.resource,
            scope=found.scope,
        )
    except OidcError as refused:
        raise OAuthRefused(
            refused.reason, "the identity provider did not exchange the sign-in for an assertion grant"
        ) from None
