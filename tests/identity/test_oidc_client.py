"""The provider client against a small in-process provider (an httpx transport): discovery must name our
issuer, the authorization URL carries PKCE S256, and an ID token passes only with the right signature,
issuer, audience, authorized party, times and nonce."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from joserfc import jwt
from joserfc.jwk import OctKey, RSAKey

from console.identity.oidc_client import OidcClient, OidcError, ProviderConfig

pytestmark = pytest.mark.anyio

ISSUER = "https://id.example.com"
CONFIG = ProviderConfig(ISSUER, "console", "s3cret", "https://console.example.com/login/oidc/callback")
NONCE = "n-0123456789abcdef0123456789abcdef"


@dataclass
class FakeProvider:
    """Discovery, JWKS and a token endpoint that hands out `id_token`; it records token requests."""

    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}))
    issuer: str = ISSUER
    id_token: str = ""
    token_error: bool = False
    token_requests: list[httpx2.Request] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx2.Response(
                200,
                json={
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{ISSUER}/auth",
                    "token_endpoint": f"{ISSUER}/token",
                    "jwks_uri": f"{ISSUER}/jwks",
                },
            )
        if path == "/jwks":
            return httpx2.Response(200, json={"keys": [self.key.as_dict(private=False)]})
        if path == "/token":
            self.token_requests.append(request)
            if self.token_error:
                return httpx2.Response(400, json={"error": "invalid_grant"})
            return httpx2.Response(
                200, json={"access_token": "at", "token_type": "Bearer", "id_token": self.id_token}
            )
        return httpx2.Response(404)

    def client(self) -> OidcClient:
        return OidcClient(CONFIG, transport=httpx2.MockTransport(self.handle))

    def sign(self, **overrides: Any) -> str:
        now = int(time.time())
        claims = {"iss": ISSUER, "sub": "u-1", "aud": "console", "exp": now + 300, "iat": now, "nonce": NONCE}
        claims.update(overrides)
        return jwt.encode(
            {"alg": "RS256", "kid": "k1"}, {k: v for k, v in claims.items() if v is not None}, self.key
        )


async def test_discovery_must_name_exactly_the_configured_issuer() -> None:
    provider = FakeProvider(issuer=ISSUER + "/")
    with pytest.raises(OidcError) as raised:
        await provider.client().metadata()
    assert raised.value.reason == "discovery_issuer_mismatch"


async def test_the_authorization_url_carries_pkce_s256_state_and_nonce() -> None:
    client = FakeProvider().client()
    url = await client.authorization_url(state="st", nonce=NONCE, code_verifier="v" * 43)
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    challenge = base64.urlsafe_b64encode(hashlib.sha256(b"v" * 43).digest()).rstrip(b"=").decode()
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{ISSUER}/auth"
    assert query == {
        "response_type": "code",
        "client_id": "console",
        "redirect_uri": CONFIG.redirect_uri,
        "scope": "openid profile email",
        "state": "st",
        "nonce": NONCE,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    again = await client.authorization_url(
        state="s2", nonce=NONCE, code_verifier="w" * 43, reauthenticate=True
    )
    again_query = {k: v[0] for k, v in parse_qs(urlsplit(again).query).items()}
    assert (again_query["prompt"], again_query["max_age"]) == ("login", "0")


async def test_the_code_is_exchanged_with_the_verifier_and_client_authentication() -> None:
    provider = FakeProvider()
    provider.id_token = provider.sign()
    assert await provider.client().exchange(code="c-1", code_verifier="v" * 43) == provider.id_token
    (request,) = provider.token_requests
    body = parse_qs(request.content.decode())
    assert body["code"] == ["c-1"]
    assert body["code_verifier"] == ["v" * 43]
    assert body["grant_type"] == ["authorization_code"]
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"console:s3cret").decode()


async def test_a_refused_code_is_a_sign_in_failure() -> None:
    provider = FakeProvider(token_error=True)
    with pytest.raises(OidcError) as raised:
        await provider.client().exchange(code="c-1", code_verifier="v" * 43)
    assert raised.value.reason == "code_rejected"


async def test_a_good_id_token_passes() -> None:
    provider = FakeProvider()
    claims = await provider.client().verify(
        provider.sign(aud=["console", "other"], azp="console"), nonce=NONCE
    )
    assert claims["sub"] == "u-1"


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"iss": "https://evil.example.com"}, "id_token_issuer"),
        ({"aud": "someone-else"}, "id_token_audience"),
        ({"aud": ["console", "other"]}, "id_token_authorized_party"),
        ({"aud": ["console", "other"], "azp": "other"}, "id_token_authorized_party"),
        ({"nonce": "n-replayed"}, "id_token_nonce"),
        ({"nonce": None}, "id_token_nonce"),
        ({"sub": None}, "id_token_subject"),
        ({"exp": int(time.time()) - 3600}, "id_token_expired"),
        ({"iat": None}, "id_token_expired"),
    ],
)
async def test_an_id_token_failing_a_check_is_refused(overrides: dict[str, Any], reason: str) -> None:
    provider = FakeProvider()
    with pytest.raises(OidcError) as raised:
        await provider.client().verify(provider.sign(**overrides), nonce=NONCE)
    assert raised.value.reason == reason


async def test_an_id_token_not_signed_by_the_provider_is_refused() -> None:
    provider = FakeProvider()
    client = provider.client()
    stranger = FakeProvider()  # its own key, same kid
    claims = json.loads(base64.urlsafe_b64decode(provider.sign().split(".")[1] + "=="))
    unsigned = ".".join(
        base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=").decode()
        for part in ({"alg": "none"}, claims)
    )
    shared = jwt.encode({"alg": "HS256"}, claims, OctKey.import_key(b"k" * 32))
    for token in (stranger.sign(), unsigned + ".", shared):
        with pytest.raises(OidcError) as raised:
            await client.verify(token, nonce=NONCE)
        assert raised.value.reason == "id_token_signature"
