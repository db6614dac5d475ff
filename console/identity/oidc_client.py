"""Talking to the OpenID provider: discovery, the authorization URL, the code exchange and the ID token.

HTTP goes through httpx2, the client Authlib's httpx integration is built on, so one transport (a test
seam) and one family of errors cover discovery, keys and the code exchange.

Everything the provider sends is checked before use: the discovery document must name exactly the
configured issuer, and the ID token must be signed with one of the provider's published keys (never
`none` or a shared secret) and carry our issuer, audience and nonce, and a current `exp`/`iat`.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from console.config import Settings, secure_url
from console.errors import ConsoleError

SCOPES = "openid profile email"
CALLBACK_PATH = "/login/oidc/callback"
# Token exchange (RFC 8693) of an ID token for an identity assertion grant (the MCP enterprise-managed
# authorization extension, SEP-990).
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # noqa: S105  # a grant type name
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"  # noqa: S105  # a type name, not a secret
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"
MAX_GRANT_CHARS = 16_384
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
TIMEOUT = 10.0
LEEWAY_SECONDS = 60
MAX_DOCUMENT_BYTES = 512 * 1024


class OidcError(ConsoleError):
    """Signing in through the provider failed; `reason` is a short code for the audit log."""

    code = "sign_in_failed"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class ProviderConfig:
    issuer: str
    client_id: str
    client_secret: str | None
    redirect_uri: str

    @classmethod
    def of(cls, settings: Settings) -> ProviderConfig | None:
        """The configured provider, or None without single sign-on."""
        if settings.oidc_issuer is None or settings.oidc_client_id is None:
            return None
        secret = settings.oidc_client_secret
        return cls(
            issuer=settings.oidc_issuer,
            client_id=settings.oidc_client_id,
            client_secret=secret.get_secret_value() if secret is not None else None,
            redirect_uri=settings.base_url.rstrip("/") + CALLBACK_PATH,
        )


@dataclass(frozen=True)
class Metadata:
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


class OidcClient:
    """One configured provider; discovery and its keys are fetched once and kept."""

    def __init__(self, config: ProviderConfig, *, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._transport = transport
        self._metadata: Metadata | None = None
        self._keys: KeySet | None = None
        self._lock = anyio.Lock()

    async def metadata(self) -> Metadata:
        """The provider's endpoints from its discovery document.

        Raises:
            OidcError: unreachable, not JSON, or the document names another issuer.
        """
        async with self._lock:
            if self._metadata is None:
                url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
                document = await self._get_json(url, "discovery")
                if document.get("issuer") != self.config.issuer:
                    raise OidcError("discovery_issuer_mismatch", _unavailable())
                endpoints = [
                    document.get(k) for k in ("authorization_endpoint", "token_endpoint", "jwks_uri")
                ]
                if not all(isinstance(e, str) and secure_url(e) for e in endpoints):
                    raise OidcError("discovery_invalid", _unavailable())
                self._metadata = Metadata(*(str(e) for e in endpoints))
            return self._metadata

    async def authorization_url(
        self, *, state: str, nonce: str, code_verifier: str, reauthenticate: bool = False
    ) -> str:
        """Where to send the browser: code flow with PKCE (S256); re-authentication forces a fresh login."""
        metadata = await self.metadata()
        extra: dict[str, str] = {"prompt": "login", "max_age": "0"} if reauthenticate else {}
        async with self._oauth() as oauth:
            url, _ = oauth.create_authorization_url(
                metadata.authorization_endpoint,
                state=state,
                code_verifier=code_verifier,
                nonce=nonce,
                **extra,
            )
        return str(url)

    async def exchange(self, *, code: str, code_verifier: str) -> str:
        """Trade the authorization code for tokens; returns the ID token.

        Raises:
            OidcError: the provider refused the code or could not be reached.
        """
        metadata = await self.metadata()
        try:
            async with self._oauth() as oauth:
                token = await oauth.fetch_token(
                    metadata.token_endpoint,
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=code_verifier,
                )
        except (OAuthError, httpx2.HTTPError, ValueError):
            raise OidcError("code_rejected", "The identity provider did not accept the sign-in.") from None
        id_token = token.get("id_token") if isinstance(token, Mapping) else None
        if not isinstance(id_token, str):
            raise OidcError("no_id_token", "The identity provider sent no ID token.")
        return id_token

    async def identity_assertion_grant(
        self, *, id_token: str, audience: str, resource: str, scope: str | None
    ) -> str:
        """Exchange the person's ID token for an identity assertion grant (ID-JAG) for the authorization
        server `audience` and the MCP server `resource` (RFC 8693 token exchange at our token endpoint).

        Raises:
            OidcError: the provider refused, could not be reached or answered no grant.
        """
        metadata = await self.metadata()
        try:
            async with self._oauth(scope=None) as oauth:  # the resource's scopes, not sign-in's
                answer = await oauth.fetch_token(
                    metadata.token_endpoint,
                    grant_type=TOKEN_EXCHANGE,
                    subject_token=id_token,
                    subject_token_type=ID_TOKEN_TYPE,
                    requested_token_type=ID_JAG_TYPE,
                    audience=audience,
                    resource=resource,
                    **({"scope": scope} if scope else {}),
                    **({} if self.config.client_secret else {"client_id": self.config.client_id}),
                )
        except OAuthError as refused:
            said = "".join(c for c in (refused.error or "")[:60] if c.isalnum() or c in "_-")
            raise OidcError(f"token_exchange_refused:{said}", _unavailable()) from None
        except (httpx2.HTTPError, ValueError):
            raise OidcError("token_exchange_unavailable", _unavailable()) from None
        grant = answer.get("access_token") if isinstance(answer, Mapping) else None
        issued = answer.get("issued_token_type") if isinstance(answer, Mapping) else None
        if issued != ID_JAG_TYPE or not isinstance(grant, str) or not 0 < len(grant) <= MAX_GRANT_CHARS:
            raise OidcError("token_exchange_no_grant", _unavailable())
        return grant

    async def verify(self, id_token: str, *, nonce: str) -> dict[str, Any]:
        """The ID token's claims once signature, issuer, audience, times and nonce all check out.

        Raises:
            OidcError: naming the check that failed.
        """
        decoded = await self._decode(id_token)
        claims = dict(decoded.claims)
        if claims.get("iss") != self.config.issuer:
            raise OidcError("id_token_issuer", _rejected())
        audience = claims.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or self.config.client_id not in audiences:
            raise OidcError("id_token_audience", _rejected())
        if (len(audiences) > 1 or "azp" in claims) and claims.get("azp") != self.config.client_id:
            raise OidcError("id_token_authorized_party", _rejected())
        sent = claims.get("nonce")
        if not isinstance(sent, str) or not hmac.compare_digest(sent.encode(), nonce.encode()):
            raise OidcError("id_token_nonce", _rejected())
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject or len(subject) > 255:
            raise OidcError("id_token_subject", _rejected())
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS, exp={"essential": True}, iat={"essential": True}
        )
        try:
            registry.validate(claims)
        except JoseError:
            raise OidcError("id_token_expired", _rejected()) from None
        return claims

    async def _decode(self, id_token: str) -> jwt.Token:
        fresh = self._keys is None
        for attempt in range(2):
            keys = await self._key_set(refresh=attempt > 0)
            try:
                return jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            except (JoseError, ValueError):
                if fresh or attempt > 0:
                    break
        # A key the provider rotated in is fetched once more before giving up.
        raise OidcError("id_token_signature", _rejected())

    async def _key_set(self, *, refresh: bool) -> KeySet:
        if self._keys is None or refresh:
            document = await self._get_json((await self.metadata()).jwks_uri, "jwks")
            try:
                self._keys = KeySet.import_key_set(document)  # type: ignore[arg-type]  # shape checked by joserfc
            except (JoseError, ValueError, TypeError, KeyError):
                raise OidcError("jwks_invalid", _unavailable()) from None
        return self._keys

    def _oauth(self, scope: str | None = SCOPES) -> AsyncOAuth2Client:
        secret = self.config.client_secret
        return AsyncOAuth2Client(
            client_id=self.config.client_id,
            client_secret=secret,
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            scope=scope,
            redirect_uri=self.config.redirect_uri,
            code_challenge_method="S256",
            timeout=TIMEOUT,
            transport=self._transport,
        )

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with httpx2.AsyncClient(timeout=TIMEOUT, transport=self._transport) as http:
                response = await http.get(url, headers={"Accept": "application/json"})
                response.raise_for_status()
                if len(response.content) > MAX_DOCUMENT_BYTES:
                    raise ValueError("document too large")
                document = response.json()
        except (httpx2.HTTPError, ValueError):
            raise OidcError(f"{what}_unavailable", _unavailable()) from None
        if not isinstance(document, dict):
            raise OidcError(f"{what}_invalid", _unavailable())
        return document


def _unavailable() -> str:
    return "The identity provider cannot be used right now. Try again later or ask an administrator."


def _rejected() -> str:
    return "The identity provider's answer did not pass the console's checks. Start the sign-in again."
