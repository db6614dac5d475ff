"""DPoP (RFC 9449): tokens bound to a key the console holds, proven with a fresh signed proof on each request.

`DPoPTransport` wraps an HTTP transport: every request it sends carries a `DPoP` proof (a JWT signed with
the key: the method, the URL without query or fragment, the time, a unique id, and — when it carries a DPoP
access token — the token's hash). A server that wants a nonce answers `use_dpop_nonce` with a `DPoP-Nonce`;
the transport keeps the newest nonce of each origin and sends the request once more with it (sections 8
and 9). The same transport serves the token endpoint (the token request, refreshes) and the MCP server.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from base64 import urlsafe_b64encode
from typing import Any

import httpx2
from joserfc import jwt
from joserfc.jwk import ECKey

ALGORITHM = "ES256"
CURVE = "P-256"
NONCE_HEADER = "dpop-nonce"
MAX_NONCE_CHARS = 500


def new_key() -> str:
    """A fresh key pair for one grant, as its private JWK (JSON): kept sealed with the grant."""
    return json.dumps(ECKey.generate_key(CURVE, private=True).as_dict(private=True))


def proof(
    key_json: str, method: str, url: str, *, access_token: str | None = None, nonce: str | None = None
) -> str:
    """A DPoP proof for one request (RFC 9449 section 4.2)."""
    key = ECKey.import_key(json.loads(key_json))
    header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": key.as_dict(private=False)}
    target = httpx2.URL(url)
    claims: dict[str, Any] = {
        "jti": secrets.token_urlsafe(24),
        "htm": method.upper(),
        "htu": str(target.copy_with(query=None, fragment=None)),
        "iat": int(time.time()),
    }
    if access_token is not None:
        digest = hashlib.sha256(access_token.encode("ascii")).digest()
        claims["ath"] = urlsafe_b64encode(digest).rstrip(b"=").decode()
    if nonce is not None:
        claims["nonce"] = nonce
    return jwt.encode(header, claims, key, algorithms=[ALGORITHM])


class DPoPTransport(httpx2.AsyncBaseTransport):
    """Signs a proof into every request; answers a server's nonce challenge by sending once more."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, key_json: str) -> None:
        self._inner = inner
        self._key = key_json
        self._nonces: dict[str, str] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        origin = f"{request.url.scheme}://{request.url.netloc.decode('ascii')}"
        response = await self._send(request, origin)
        if not await _asks_for_nonce(response):
            return response
        await response.aclose()
        return await self._send(request, origin)

    async def _send(self, request: httpx2.Request, origin: str) -> httpx2.Response:
        authorization = request.headers.get("authorization", "")
        scheme, _, token = authorization.partition(" ")
        request.headers["DPoP"] = proof(
            self._key,
            request.method,
            str(request.url),
            access_token=token.strip() if scheme.lower() == "dpop" else None,
            nonce=self._nonces.get(origin),
        )
        response = await self._inner.handle_async_request(request)
        nonce = response.headers.get(NONCE_HEADER)
        if nonce and len(nonce) <= MAX_NONCE_CHARS and nonce.isprintable():
            self._nonces[origin] = nonce
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _asks_for_nonce(response: httpx2.Response) -> bool:
    """A resource server's `WWW-Authenticate: DPoP error="use_dpop_nonce"` (401) or an authorization
    server's `{"error": "use_dpop_nonce"}` (400), with the nonce to use. A 400 is read to tell (whoever
    gets it still can: a read response keeps its content)."""
    if NONCE_HEADER not in response.headers or response.status_code not in (400, 401):
        return False
    if "use_dpop_nonce" in response.headers.get("www-authenticate", ""):
        return True
    if response.status_code != 400:
        return False
    try:
        said = json.loads(await response.aread())
    except ValueError:
        return False
    return isinstance(said, dict) and said.get("error") == "use_dpop_nonce"
