"""Who the console is to an authorization server, in the order MCP authorization gives:

1. the client an admin registered by hand for that MCP server (`mcp_server.oauth_client_json`);
2. else, when the authorization server accepts Client ID Metadata Documents and the console is served
   over https, the URL of the console's own document (`<CONSOLE_BASE_URL>/oauth/client-metadata.json`);
3. else dynamic client registration (RFC 7591), once per authorization server and redirect URI, kept in
   `oauth_client` with its secret sealed.

Token endpoint authentication is the first method the authorization server lists that the client can
use: client_secret_basic or client_secret_post for a client with a secret, none for one without.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.config import Settings
from console.identity.credentials import CredentialCipher
from console.mcp.models import McpServer
from console.mcp.sealed import open_oauth_client
from console.oauth.discovery import AuthServer, union_scopes
from console.oauth.errors import OAuthRefused
from console.oauth.http import post_json
from console.oauth.models import OAuthClient

CLIENT_NAME = "Approval console"
METADATA_PATH = "/oauth/client-metadata.json"
CALLBACK_PATH = "/oauth/callback"
SECRET_METHODS = ("client_secret_basic", "client_secret_post")
MAX_CLIENT_ID_CHARS = 2000


@dataclass(frozen=True)
class ClientIdentity:
    client_id: str
    client_secret: str | None
    auth_method: str  # client_secret_basic | client_secret_post | none
    source: str  # pre_registered | metadata_document | registered
    row_id: str | None = None  # a registered client's oauth_client row


@dataclass(frozen=True)
class ClientSite:
    """Where the console is, as an OAuth client: its callback, and the URL of its Client ID Metadata
    Document (None: there is none an authorization server could fetch)."""

    base_url: str
    metadata_url: str | None

    @classmethod
    def of(cls, settings: Settings) -> ClientSite:
        """The document's URL is the setting, else `<base_url>/oauth/client-metadata.json`; either must be
        https with a path (an authorization server fetches it; MCP wants an https client ID)."""
        url = settings.oauth_client_metadata_url or settings.base_url.rstrip("/") + METADATA_PATH
        parts = urlsplit(url)
        usable = parts.scheme == "https" and parts.hostname and parts.path not in ("", "/")
        return cls(settings.base_url, url if usable else None)

    @property
    def redirect_uri(self) -> str:
        return redirect_uri(self.base_url)


def redirect_uri(base_url: str) -> str:
    return base_url.rstrip("/") + CALLBACK_PATH


def metadata_document(site: ClientSite) -> dict[str, Any] | None:
    """The Client ID Metadata Document at `site.metadata_url` (the console as a public client), or None
    when the console has none."""
    if site.metadata_url is None:
        return None
    return {
        "client_id": site.metadata_url,
        "client_name": CLIENT_NAME,
        "client_uri": site.base_url.rstrip("/") + "/",
        "redirect_uris": [site.redirect_uri],
        "application_type": "web",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


async def client_for(
    *,
    session: AsyncSession,
    http: httpx2.AsyncClient,
    cipher: CredentialCipher,
    server: McpServer,
    auth_server: AuthServer,
    site: ClientSite,
    scope: str | None,
) -> ClientIdentity:
    """The console's identity at `auth_server` for `server`, registering it there if need be.

    Raises:
        OAuthRefused: the authorization server cannot be registered with, or refused.
    """
    entered = open_oauth_client(cipher, server)
    if entered is not None:
        method = auth_method_for(auth_server, entered.secret)
        return ClientIdentity(entered.client_id, entered.secret, method, "pre_registered")
    if site.metadata_url is not None and auth_server.metadata_documents:
        return ClientIdentity(site.metadata_url, None, "none", "metadata_document")
    redirect = site.redirect_uri
    row = await _registered(session, auth_server.issuer, redirect)
    if row is None:
        row = await _register(session, http, cipher, auth_server, redirect, scope)
    return ClientIdentity(
        row.client_id, registered_secret(cipher, row), row.auth_method, "registered", row.id
    )


def registered_secret(cipher: CredentialCipher, row: OAuthClient) -> str | None:
    return cipher.open_bound(row.sealed_secret, _client_binding(row.id)) if row.sealed_secret else None


async def forget_registration(*, session: AsyncSession, issuer: str, redirect: str) -> None:
    """Drop the registration at `issuer` (it refused the client): the next attempt registers again."""
    row = await _registered(session, issuer, redirect)
    if row is not None:
        await session.delete(row)


def auth_method_for(auth_server: AuthServer, secret: str | None) -> str:
    """The first method the authorization server lists that a client with (or without) a secret can use."""
    usable = SECRET_METHODS if secret is not None else ("none",)
    return next((m for m in auth_server.auth_methods if m in usable), usable[0])


async def _registered(session: AsyncSession, issuer: str, redirect: str) -> OAuthClient | None:
    query = select(OAuthClient).where(OAuthClient.issuer == issuer, OAuthClient.redirect_uri == redirect)
    return (await session.execute(query)).scalar_one_or_none()


async def _register(
    session: AsyncSession,
    http: httpx2.AsyncClient,
    cipher: CredentialCipher,
    auth_server: AuthServer,
    redirect: str,
    scope: str | None,
) -> OAuthClient:
    endpoint = auth_server.registration_endpoint
    if endpoint is None:
        raise OAuthRefused(
            "no_registration",
            f"the authorization server {auth_server.issuer[:300]} accepts no registration and the console "
            "has no client there: an admin can enter the client id and secret the provider issued",
        )
    wanted = next((m for m in auth_server.auth_methods if m in (*SECRET_METHODS, "none")), "none")
    body = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect],
        "application_type": "web",  # a console in a browser, at an https or loopback address
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted,
    }
    # Some authorization servers grant a client only the scopes it registered: these, and every scope the
    # server lists, so that a later step-up is covered too.
    registered_scope = union_scopes(scope, " ".join(auth_server.scopes_supported or ()))
    if registered_scope:
        body["scope"] = registered_scope
    answer = await post_json(http, endpoint, body, "client registration endpoint")
    client_id, secret = answer.get("client_id"), answer.get("client_secret")
    if not isinstance(client_id, str) or not 0 < len(client_id) <= MAX_CLIENT_ID_CHARS:
        raise OAuthRefused("invalid_registration", "the client registration answered no client_id")
    if secret is not None and (not isinstance(secret, str) or not 0 < len(secret) <= MAX_CLIENT_ID_CHARS):
        raise OAuthRefused(
            "invalid_registration", "the client registration answered an invalid client_secret"
        )
    answered = answer.get("token_endpoint_auth_method")
    method = answered if answered in (*SECRET_METHODS, "none") else wanted
    if secret is None:
        method = "none"
    row = OAuthClient(
        issuer=auth_server.issuer, redirect_uri=redirect, client_id=client_id, auth_method=method
    )
    session.add(row)
    await session.flush()
    if secret is not None:
        row.sealed_secret = cipher.seal_bound(secret, _client_binding(row.id))
    return row


def _client_binding(row_id: str) -> str:
    return f"oauth-client:{row_id}"
