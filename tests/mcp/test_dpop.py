"""DPoP proofs (RFC 9449 section 4.2), checked with an independent JOSE library as a server checks them.
The whole exchange (the token request, the servers' nonces, the MCP requests) runs against the official
conformance suite's servers in tests/test_conformance.py (auth/dpop, auth/dpop-nonce)."""

from __future__ import annotations

import hashlib
import json
from base64 import urlsafe_b64decode, urlsafe_b64encode
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey

from console.mcp.dpop import new_key, proof
from console.mcp.endpoint import Endpoint


def checked(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The proof's header and claims, its signature verified with the public key it carries."""
    encoded = token.split(".")[0]
    header = json.loads(urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    decoded = jwt.decode(token, ECKey.import_key(header["jwk"]), algorithms=["ES256"])
    return dict(decoded.header), dict(decoded.claims)


def test_a_proof_names_the_request_without_its_query_and_carries_only_the_public_key() -> None:
    key = new_key()
    header, claims = checked(proof(key, "post", "https://mcp.example.com/mcp?session=1#top", nonce="n-1"))
    assert (header["typ"], header["alg"]) == ("dpop+jwt", "ES256")
    assert "d" not in header["jwk"]
    assert header["jwk"] == ECKey.import_key(json.loads(key)).as_dict(private=False)
    assert (claims["htm"], claims["htu"], claims["nonce"]) == ("POST", "https://mcp.example.com/mcp", "n-1")
    assert "ath" not in claims


def test_a_proof_for_a_token_carries_its_hash_and_every_proof_is_fresh() -> None:
    key, token = new_key(), "token-1"
    first = checked(proof(key, "POST", "https://mcp.example.com/mcp", access_token=token))[1]
    second = checked(proof(key, "POST", "https://mcp.example.com/mcp", access_token=token))[1]
    expected = urlsafe_b64encode(hashlib.sha256(b"token-1").digest()).rstrip(b"=").decode()
    assert first["ath"] == second["ath"] == expected
    assert first["jti"] != second["jti"]


def test_each_grant_gets_its_own_key_and_an_endpoint_never_shows_it() -> None:
    key = new_key()
    assert key != new_key()
    endpoint = Endpoint.http("https://mcp.example.com/mcp", {}, dpop_key=key)
    assert json.loads(key)["d"] not in repr(endpoint)
