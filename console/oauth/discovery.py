"""Finding who authorizes an MCP server, and how (MCP authorization, 2025-11-25 and 2026-07-28).

1. Protected resource metadata (RFC 9728): the challenge's `resource_metadata`, else the path-based and
   then the root well-known address. Its `resource` must be the server's own URL or a parent of it.
2. Authorization server metadata (RFC 8414, OpenID discovery) for its first authorization server, at the
   path-insertion and path-appending addresses; the document must name that exact issuer. A server with
   no resource metadata is the older kind (2025-03-26): its origin is the issuer, with the default
   endpoints when it publishes no metadata either.
3. PKCE with S256 must be advertised; a server that does not is refused, but for Microsoft Entra ID's
   v2.0 endpoints, which take it without saying so in their OpenID discovery document.
4. Whether `resource` is sent, and the scopes asked for without it (resource_indicator.py).

Everything fetched is untrusted: endpoints must be http(s) URLs, lists must be lists of strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    issuers_match,
)
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

from console.config import secure_url
from console.mcp.challenge import Challenge
from console.mcp.dpop import ALGORITHM as DPOP_ALGORITHM
from console.oauth.errors import OAuthRefused
from console.oauth.http import get_json
from console.oauth.resource_indicator import ResourceIndicator, is_entra_v2, qualified_scope

MAX_SCOPE_CHARS = 2000
OFFLINE_ACCESS = "offline_access"
# RFC 8414 section 2: without the field, client_secret_basic is the default.
DEFAULT_AUTH_METHODS = ("client_secret_basic",)


@dataclass(frozen=True)
class AuthServer:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes_supported: tuple[str, ...] | None = None
    auth_methods: tuple[str, ...] = DEFAULT_AUTH_METHODS
    metadata_documents: bool = False  # client_id_metadata_document_supported
    iss_parameter: bool = False  # authorization_response_iss_parameter_supported (RFC 9207)
    grant_types: tuple[str, ...] | None = None
    dpop: bool = False  # binds tokens to a key with DPoP (RFC 9449) and takes the console's algorithm


@dataclass(frozen=True)
class Discovered:
    resource: str  # the `resource` (RFC 8707) of every authorization and token request, unless omitted
    auth_server: AuthServer
    scope: str | None  # what to ask for; None: no scope parameter
    resource_scopes: tuple[str, ...] | None = None  # the resource's scopes_supported
    omit_resource: bool = False  # the authorization server refuses `resource` (Microsoft Entra ID)


async def discover(
    http: httpx2.AsyncClient,
    server_url: str,
    challenge: Challenge | None,
    indicator: ResourceIndicator | None = None,
) -> Discovered:
    """Who authorizes `server_url` and what to ask it for, with or without `resource` as `indicator`
    (the server's setting) says.

    Raises:
        OAuthRefused: a metadata document is unreachable, invalid or names another resource or issuer,
            or the authorization server does not support PKCE with S256.
    """
    hinted = challenge.resource_metadata if challenge is not None else None
    resource = resource_url_from_server_url(server_url)
    metadata: dict[str, Any] | None = None
    for url in build_protected_resource_metadata_discovery_urls(_http_url(hinted), server_url):
        metadata = await get_json(http, url, "protected resource metadata")
        if metadata is not None:
            break
    resource_scopes: tuple[str, ...] | None = None
    if metadata is None:
        issuer = f"{urlsplit(resource).scheme}://{urlsplit(resource).netloc}"
        auth_server = await _auth_server(http, None, server_url, issuer)
    else:
        resource = _resource_of(metadata, resource)
        servers = _strings(metadata.get("authorization_servers"))
        if not servers or _http_url(servers[0]) is None:
            raise OAuthRefused(
                "invalid_document", "the protected resource metadata names no authorization server"
            )
        resource_scopes = _strings(metadata.get("scopes_supported"))
        auth_server = await _auth_server(http, servers[0], server_url, servers[0])
    indicator = indicator or ResourceIndicator()
    omitted = indicator.omits(auth_server.issuer, auth_server.authorization_endpoint)
    if omitted and indicator.scope_prefix:
        asked = challenge.scope if challenge is not None and challenge.scope else None
        asked = asked or " ".join(resource_scopes or ())
        scope: str | None = _bounded(qualified_scope(asked, indicator.scope_prefix))
    else:
        scope = choose_scope(challenge, resource_scopes, auth_server)
    return Discovered(resource, auth_server, scope, resource_scopes, omitted)


def choose_scope(
    challenge: Challenge | None, resource_scopes: tuple[str, ...] | None, auth_server: AuthServer
) -> str | None:
    """The challenge's scope, else the resource's scopes_supported, else the authorization server's, else
    none; with offline_access added when the authorization server offers it (for a refresh token)."""
    if challenge is not None and challenge.scope:
        chosen: str | None = challenge.scope
    elif resource_scopes is not None:
        chosen = " ".join(resource_scopes)
    elif auth_server.scopes_supported is not None:
        chosen = " ".join(auth_server.scopes_supported)
    else:
        chosen = None
    if chosen is not None and OFFLINE_ACCESS in (auth_server.scopes_supported or ()):
        chosen = union_scopes(chosen, OFFLINE_ACCESS)
    return _bounded(chosen) if chosen is not None else None


def _bounded(scope: str) -> str | None:
    if len(scope) > MAX_SCOPE_CHARS:
        raise OAuthRefused("invalid_scope", "the server asks for more scopes than the console will request")
    return scope or None


def union_scopes(*scopes: str | None) -> str:
    """Every scope named in any of `scopes`, each once, in order of first mention."""
    merged: list[str] = []
    for scope in scopes:
        for name in (scope or "").split():
            if name not in merged:
                merged.append(name)
    return " ".join(merged)


def _resource_of(metadata: dict[str, Any], canonical: str) -> str:
    """The metadata's resource, which must be the server's URL or a parent of it (RFC 9728 section 3.3)."""
    named = metadata.get("resource")
    if named is None:
        return canonical
    if not isinstance(named, str) or _http_url(named) is None:
        raise OAuthRefused("invalid_document", "the protected resource metadata names no valid resource")
    if not check_resource_allowed(requested_resource=canonical, configured_resource=named):
        raise OAuthRefused(
            "resource_mismatch",
            f"the protected resource metadata is for {named[:300]}, not for this server ({canonical})",
        )
    return named


async def _auth_server(
    http: httpx2.AsyncClient, named: str | None, server_url: str, issuer: str
) -> AuthServer:
    for url in build_oauth_authorization_server_metadata_discovery_urls(named, server_url):
        document = await get_json(http, url, "authorization server metadata")
        if document is not None:
            return _parse_auth_server(document, issuer, legacy=named is None)
    if named is not None:
        raise OAuthRefused("no_metadata", f"the authorization server {issuer[:300]} publishes no metadata")
    # The 2025-03-26 default endpoints, for a server that publishes no metadata at all.
    return AuthServer(
        issuer=issuer,
        authorization_endpoint=f"{issuer}/authorize",
        token_endpoint=f"{issuer}/token",
        registration_endpoint=f"{issuer}/register",
    )


def _parse_auth_server(document: dict[str, Any], expected: str, *, legacy: bool) -> AuthServer:
    issuer = document.get("issuer")
    matches = issuer == expected or (legacy and isinstance(issuer, str) and issuers_match(issuer, expected))
    if not matches:
        raise OAuthRefused(
            "issuer_mismatch",
            f"the authorization server metadata names issuer {str(issuer)[:300]!r}, not {expected[:300]!r}",
        )
    assert isinstance(issuer, str)  # noqa: S101  # matched a str
    endpoints = {}
    for name in ("authorization_endpoint", "token_endpoint"):
        value = _http_url(document.get(name))
        if value is None:
            raise OAuthRefused("invalid_document", f"the authorization server metadata has no valid {name}")
        endpoints[name] = value
    methods = _strings(document.get("code_challenge_methods_supported")) or ()
    if "S256" not in methods and not is_entra_v2(issuer):
        raise OAuthRefused(
            "pkce_unsupported",
            f"the authorization server {issuer[:300]} does not support PKCE with S256, which MCP requires",
        )
    return AuthServer(
        issuer=issuer,
        registration_endpoint=_http_url(document.get("registration_endpoint")),
        revocation_endpoint=_http_url(document.get("revocation_endpoint")),
        scopes_supported=_strings(document.get("scopes_supported")),
        auth_methods=_strings(document.get("token_endpoint_auth_methods_supported")) or DEFAULT_AUTH_METHODS,
        metadata_documents=document.get("client_id_metadata_document_supported") is True,
        iss_parameter=document.get("authorization_response_iss_parameter_supported") is True,
        grant_types=_strings(document.get("grant_types_supported")),
        dpop=DPOP_ALGORITHM in (_strings(document.get("dpop_signing_alg_values_supported")) or ()),
        **endpoints,
    )


def _strings(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str) and 0 < len(item) <= 300)


def _http_url(value: Any) -> str | None:
    """`value` if it is an https URL, or http to this machine (OAuth 2.1 section 1.5); else None."""
    if not isinstance(value, str) or len(value) > 2000:
        return None
    parts = urlsplit(value)
    if not parts.hostname or parts.fragment:
        return None
    if parts.scheme == "https" or (parts.scheme == "http" and secure_url(f"http://{parts.netloc}")):
        return value
    return None
