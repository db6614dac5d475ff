"""Team notes taking identity assertion grants (enterprise-managed authorization, SEP-990): an ID-JAG an
organisation's identity provider signed, presented by the one client registered for it.

Environment (both, or neither):
    OAUTH_ENTERPRISE_IDP      the identity provider's issuer; its published keys sign the grants
    OAUTH_ENTERPRISE_CLIENT   `<client id>:<secret>` of the confidential client that may present them

A grant counts once its signature checks against the provider's keys and it is of type
`oauth-id-jag+jwt`, from that issuer, for this authorization server, this client and this server's
resource, current, with a subject, and not presented before.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from mcp.server.auth.provider import TokenError

GRANT_TYPE = "oauth-id-jag+jwt"
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
TIMEOUT_SECONDS = 10.0
LEEWAY_SECONDS = 30


@dataclass
class Enterprise:
    idp_issuer: str
    client_id: str
    client_secret: str
    seen: dict[str, float] = field(default_factory=dict)  # the jti of each grant presented, until it expires

    @classmethod
    def from_env(cls) -> Enterprise | None:
        issuer, client = os.environ.get("OAUTH_ENTERPRISE_IDP"), os.environ.get("OAUTH_ENTERPRISE_CLIENT")
        if not issuer or not client or ":" not in client:
            return None
        client_id, secret = client.split(":", 1)
        return cls(issuer, client_id, secret)

    async def verified(
        self, assertion: str, *, audience: str, resource: str, client_id: str
    ) -> dict[str, Any]:
        """The grant's claims once every check passed.

        Raises:
            TokenError: naming the check that failed.
        """
        if client_id != self.client_id:
            raise TokenError("unauthorized_client", "this client may not present identity assertion grants")
        try:
            token = jwt.decode(assertion, await self._keys(), algorithms=ALGORITHMS)
        except (JoseError, ValueError):
            raise TokenError("invalid_grant", "the grant's signature does not check out") from None
        claims = dict(token.claims)
        audiences = [claims.get("aud")] if isinstance(claims.get("aud"), str) else claims.get("aud") or []
        problems = {
            "typ": token.header.get("typ") != GRANT_TYPE,
            "iss": claims.get("iss") != self.idp_issuer,
            "aud": not {audience, f"{audience}/"} & set(audiences),  # the issuer as the metadata names it
            "client_id": claims.get("client_id") != client_id,
            "resource": claims.get("resource") != resource,
            "sub": not isinstance(claims.get("sub"), str) or not claims["sub"],
            "jti": not isinstance(claims.get("jti"), str) or claims["jti"] in self.seen,
        }
        wrong = [name for name, failed in problems.items() if failed]
        if wrong:
            raise TokenError("invalid_grant", f"the grant's {', '.join(wrong)} is not acceptable")
        registry = jwt.JWTClaimsRegistry(
            leeway=LEEWAY_SECONDS, exp={"essential": True}, iat={"essential": True}
        )
        try:
            registry.validate(claims)
        except JoseError:
            raise TokenError("invalid_grant", "the grant is not current") from None
        now = time.time()
        self.seen = {jti: until for jti, until in self.seen.items() if until > now}
        self.seen[claims["jti"]] = float(claims["exp"]) + LEEWAY_SECONDS
        return claims

    async def _keys(self) -> KeySet:
        try:
            async with httpx2.AsyncClient(timeout=TIMEOUT_SECONDS) as http:
                discovery = await http.get(f"{self.idp_issuer.rstrip('/')}/.well-known/openid-configuration")
                discovery.raise_for_status()
                keys = await http.get(discovery.json()["jwks_uri"])
                keys.raise_for_status()
                return KeySet.import_key_set(keys.json())
        except (httpx2.HTTPError, ValueError, KeyError, TypeError, JoseError):
            raise TokenError("invalid_grant", "the identity provider's keys cannot be fetched") from None
