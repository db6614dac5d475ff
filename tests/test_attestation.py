"""Approval attestations: what verifies, each reason one is refused, and the keys that sign them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from console.attestation import (
    APPROVAL_META,
    Approval,
    AttestationRefused,
    Attester,
    Claims,
    UsedAttestations,
    arguments_digest,
    derived_key,
    jwks,
    load_private_key,
    verify,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
DECIDED = NOW - timedelta(minutes=2)
APPROVALS = (Approval("lead", "accept", DECIDED - timedelta(minutes=1)), Approval("lead2", "cosign", DECIDED))
PARAMS: dict[str, Any] = {"name": "deploy", "arguments": {"env": "production", "replicas": 3}}
CONSOLE_KEY = Attester(derived_key("console-secret-" + "s" * 32))
KEYS = jwks(CONSOLE_KEY.public_jwk())


def attest(
    attester: Attester = CONSOLE_KEY, params: dict[str, Any] = PARAMS, **overrides: Any
) -> dict[str, Any]:
    """The `_meta` of a request the console sends after lead and lead2 approved it."""
    values: dict[str, Any] = {
        "issuer": "https://console.example",
        "call_id": "call-1",
        "server": "deployer",
        "method": "tools/call",
        "params": params,
        "approvals": APPROVALS,
        "rule": "rule-7",
        "decided_at": DECIDED,
        "minutes": 10,
        "now": NOW,
    }
    return {APPROVAL_META: attester.sign(**{**values, **overrides})}


def refusal(meta: Any, params: dict[str, Any] = PARAMS, **options: Any) -> str:
    with pytest.raises(AttestationRefused) as refused:
        verify(meta, KEYS, params, **{"now": NOW, **options})
    return refused.value.reason


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forged(header: dict[str, Any], payload: dict[str, Any], sign: Any = None) -> dict[str, Any]:
    """A compact JWS put together by hand; `sign` turns the signing input into the signature."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(payload).encode())}"
    signature = b"" if sign is None else sign(signing_input.encode())
    return {APPROVAL_META: f"{signing_input}.{b64url(signature)}"}


def payload_of(meta: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(base64.urlsafe_b64decode(meta[APPROVAL_META].split(".")[1] + "=="))
    return body


def test_a_valid_attestation_verifies_and_returns_its_claims() -> None:
    meta = attest()
    claims = verify(meta, KEYS, PARAMS, method="tools/call", server="deployer", now=NOW)
    assert claims == Claims(
        issuer="https://console.example",
        call_id="call-1",
        server="deployer",
        method="tools/call",
        name="deploy",
        arguments_sha256=arguments_digest(PARAMS),
        approvals=APPROVALS,
        rule="rule-7",
        decided_at=DECIDED,
        issued_at=NOW,
        expires_at=NOW + timedelta(minutes=10),
        token_id=payload_of(meta)["jti"],
    )


def test_the_payload_is_the_documented_public_format() -> None:
    meta = attest()
    header = json.loads(base64.urlsafe_b64decode(meta[APPROVAL_META].split(".")[0] + "=="))
    assert header == {"alg": "EdDSA", "typ": "approval+jwt", "kid": CONSOLE_KEY.key_id}
    payload = payload_of(meta)
    assert len(payload.pop("jti")) >= 16
    assert payload == {
        "v": 1,
        "iss": "https://console.example",
        "iat": int(NOW.timestamp()),
        "exp": int(NOW.timestamp()) + 600,
        "call": "call-1",
        "server": "deployer",
        "method": "tools/call",
        "name": "deploy",
        "args_sha256": hashlib.sha256(b'{"env":"production","replicas":3}').hexdigest(),
        "approvals": [
            {"by": "lead", "action": "accept", "at": "2026-03-04T05:03:07Z"},
            {"by": "lead2", "action": "cosign", "at": "2026-03-04T05:04:07Z"},
        ],
        "rule": "rule-7",
        "decided_at": "2026-03-04T05:04:07Z",
    }


def test_each_attestation_has_its_own_token_id() -> None:
    assert payload_of(attest())["jti"] != payload_of(attest())["jti"]


def test_arguments_changed_after_signing_are_refused() -> None:
    changed = {"name": "deploy", "arguments": {"env": "production", "replicas": 30}}
    assert refusal(attest(), changed) == "the request's arguments differ from the arguments people approved"
    added = {"name": "deploy", "arguments": {**PARAMS["arguments"], "force": True}}
    assert refusal(attest(), added) == "the request's arguments differ from the arguments people approved"


def test_another_tool_name_is_refused() -> None:
    other = {"name": "destroy", "arguments": PARAMS["arguments"]}
    assert refusal(attest(), other) == "the attestation approves the name 'deploy', not 'destroy'"


def test_a_resource_attestation_binds_the_uri_and_no_arguments() -> None:
    params = {"uri": "test://secrets/database"}
    meta = attest(method="resources/read", params=params)
    assert verify(meta, KEYS, params, method="resources/read", now=NOW).name == "test://secrets/database"
    assert payload_of(meta)["args_sha256"] == hashlib.sha256(b"{}").hexdigest()
    assert refusal(meta, {"uri": "test://secrets/other"}) == (
        "the attestation approves the uri 'test://secrets/database', not 'test://secrets/other'"
    )


def test_another_method_or_server_is_refused_when_the_server_says_which() -> None:
    assert refusal(attest(), method="prompts/get") == "the attestation is for tools/call, not prompts/get"
    assert refusal(attest(), server="billing") == (
        "the attestation is for the server 'deployer', not 'billing'"
    )


def test_an_expired_attestation_is_refused_after_the_leeway() -> None:
    expires = NOW + timedelta(minutes=10)
    verify(attest(), KEYS, PARAMS, now=expires + timedelta(seconds=30))
    assert refusal(attest(), now=expires + timedelta(seconds=31)) == (
        "the attestation expired at 2026-03-04T05:16:07Z"
    )
    assert refusal(attest(), now=expires + timedelta(seconds=1), leeway_seconds=0).startswith(
        "the attestation expired"
    )


def test_an_attestation_not_yet_valid_is_refused_beyond_the_leeway() -> None:
    verify(attest(), KEYS, PARAMS, now=NOW - timedelta(seconds=30))
    assert refusal(attest(), now=NOW - timedelta(seconds=31)) == (
        "the attestation is not valid before 2026-03-04T05:06:07Z"
    )


def test_an_attestation_signed_by_a_key_not_in_the_jwks_is_refused() -> None:
    stranger = Attester(Ed25519PrivateKey.generate())
    assert refusal(attest(stranger)) == (
        f"the attestation's key {stranger.key_id} is not among the console's keys (JWKS)"
    )


def test_another_key_claiming_the_published_key_id_is_refused() -> None:
    impostor = Attester(Ed25519PrivateKey.generate())
    impostor.key_id = CONSOLE_KEY.key_id
    assert refusal(attest(impostor)) == (
        f"the attestation's signature does not verify with key {CONSOLE_KEY.key_id}"
    )


def test_a_token_whose_signature_was_swapped_is_refused() -> None:
    header, payload, _ = attest()[APPROVAL_META].split(".")
    other_signature = attest(params={"name": "deploy"})[APPROVAL_META].split(".")[2]
    meta = {APPROVAL_META: f"{header}.{payload}.{other_signature}"}
    assert refusal(meta).startswith("the attestation's signature does not verify")


def test_alg_none_and_hmac_tokens_crafted_by_hand_are_refused() -> None:
    payload = payload_of(attest())
    header = {"typ": "approval+jwt", "kid": CONSOLE_KEY.key_id}
    none = forged({"alg": "none", **header}, payload)
    assert refusal(none) == "the attestation's algorithm is 'none', not 'EdDSA'"
    # The classic confusion: an HMAC keyed with the public key, which anyone can read from the JWKS.
    public = base64.urlsafe_b64decode(CONSOLE_KEY.public_jwk()["x"] + "=")
    hs256 = forged({"alg": "HS256", **header}, payload, lambda data: hmac.digest(public, data, "sha256"))
    assert refusal(hs256) == "the attestation's algorithm is 'HS256', not 'EdDSA'"
    assert refusal(forged({**header}, payload)) == "the approval attestation is not a well-formed compact JWS"


def test_a_header_that_names_its_own_key_is_refused() -> None:
    key = Ed25519PrivateKey.generate()
    header = {"alg": "EdDSA", "typ": "approval+jwt", "kid": CONSOLE_KEY.key_id, "jwk": {"kty": "OKP"}}
    meta = forged(header, payload_of(attest()), key.sign)
    assert refusal(meta) == "the attestation's header has fields it may not have: jwk"


@pytest.mark.parametrize(
    "token",
    ["", "not-a-jws", "a.b", "a.b.c.d", "!!!.###.$$$", "e30.e30.", f"{b64url(b'[1]')}.e30.AA", "ëé.a.b"],
)
def test_a_malformed_token_is_refused(token: str) -> None:
    assert refusal({APPROVAL_META: token}) == "the approval attestation is not a well-formed compact JWS"


def test_a_token_that_is_not_text_is_refused() -> None:
    assert refusal({APPROVAL_META: 42}) == "the approval attestation is a int, not a compact JWS"


@pytest.mark.parametrize("meta", [None, {}, {"progressToken": 1}])
def test_a_request_without_an_attestation_is_refused(meta: dict[str, Any] | None) -> None:
    assert refusal(meta) == (
        "the request carries no approval attestation (_meta 'io.approval-console/approval')"
    )


def test_a_payload_of_another_version_or_shape_is_refused_even_when_signed() -> None:
    console_key = derived_key("console-secret-" + "s" * 32)
    header = {"alg": "EdDSA", "typ": "approval+jwt", "kid": CONSOLE_KEY.key_id}
    payload = payload_of(attest())
    assert refusal(forged(header, {**payload, "v": 2}, console_key.sign)) == (
        "the attestation is of version 2; this code reads 1"
    )
    assert refusal(forged(header, {**payload, "exp": "soon"}, console_key.sign)) == (
        "the attestation's payload has no valid exp"
    )
    assert refusal(forged(header, {**payload, "approvals": [{"by": "lead"}]}, console_key.sign)) == (
        "the attestation's payload has no valid approvals"
    )
    assert refusal(forged(header, {**payload, "method": "tools/list"}, console_key.sign)) == (
        "the attestation is for 'tools/list', which is not attested"
    )
    wrong_type = {**header, "typ": "JWT"}
    assert refusal(forged(wrong_type, payload, console_key.sign)) == (
        "the token's type is 'JWT', not 'approval+jwt'"
    )


def test_the_same_attestation_verified_twice_is_a_replay() -> None:
    seen = UsedAttestations()
    meta = attest()
    verify(meta, KEYS, PARAMS, now=NOW, seen=seen)
    token_id = payload_of(meta)["jti"]
    assert refusal(meta, seen=seen) == f"the attestation {token_id} was used already (a replay)"


def test_an_attestation_of_one_call_is_a_replay_for_another_call_with_the_same_params() -> None:
    seen = UsedAttestations()
    call_a = attest(call_id="call-a")
    assert verify(call_a, KEYS, PARAMS, now=NOW, seen=seen).call_id == "call-a"
    assert refusal(call_a, dict(PARAMS), seen=seen).endswith("was used already (a replay)")
    call_b = attest(call_id="call-b")
    assert verify(call_b, KEYS, PARAMS, now=NOW, seen=seen).call_id == "call-b"


def test_a_refused_attestation_is_not_used_up() -> None:
    seen = UsedAttestations()
    meta = attest()
    refusal(meta, {"name": "destroy"}, seen=seen)
    verify(meta, KEYS, PARAMS, now=NOW, seen=seen)


def test_used_attestations_are_forgotten_once_expired_and_bounded() -> None:
    seen = UsedAttestations(limit=2)
    assert seen.record("a", until=NOW, now=NOW)
    assert seen.record("b", until=NOW + timedelta(minutes=5), now=NOW)
    assert not seen.record("a", until=NOW, now=NOW)
    with pytest.raises(AttestationRefused, match="2 unexpired attestations are remembered"):
        seen.record("c", until=NOW + timedelta(minutes=5), now=NOW)
    assert seen.record("c", until=NOW + timedelta(minutes=5), now=NOW + timedelta(seconds=1))
    assert len(seen) == 2


def test_an_attestation_without_a_policy_rule_says_so() -> None:
    assert verify(attest(rule=None), KEYS, PARAMS, now=NOW).rule is None


def test_arguments_digest_is_independent_of_key_order_and_number_spelling() -> None:
    one = {"name": "t", "arguments": {"b": 1, "a": {"y": [1.0, "x"], "x": None}}}
    other = {"arguments": {"a": {"x": None, "y": [1, "x"]}, "b": 1.0}, "name": "t"}
    assert arguments_digest(one) == arguments_digest(other)
    assert (
        arguments_digest({"name": "t"})
        == arguments_digest({"arguments": {}})
        == hashlib.sha256(b"{}").hexdigest()
    )
    assert arguments_digest({"arguments": {"b": 1}}) != arguments_digest({"arguments": {"b": "1"}})


def test_the_public_jwk_is_an_ed25519_signing_key_named_by_its_thumbprint() -> None:
    jwk = CONSOLE_KEY.public_jwk()
    assert set(jwk) == {"kty", "crv", "x", "kid", "use", "alg"}
    assert (jwk["kty"], jwk["crv"], jwk["use"], jwk["alg"]) == ("OKP", "Ed25519", "sig", "EdDSA")
    required = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": jwk["x"]}, separators=(",", ":"))
    assert jwk["kid"] == CONSOLE_KEY.key_id == b64url(hashlib.sha256(required.encode()).digest())
    assert jwks(jwk) == KEYS == {"keys": [jwk]}


def test_private_keys_load_from_pem_and_from_raw_base64() -> None:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    expected = Attester(key).key_id
    assert Attester(load_private_key(pem)).key_id == expected
    assert Attester(load_private_key(f"  {base64.b64encode(raw).decode()}\n")).key_id == expected


def _pem(key: Any, encryption: Any = None) -> str:
    text: bytes = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        encryption or serialization.NoEncryption(),
    )
    return text.decode()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not a key", "the key is neither PEM nor base64"),
        (base64.b64encode(b"x" * 16).decode(), "the key must be 32 bytes (base64), got 16"),
        (
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
            "the key is not a readable PEM private key",
        ),
        (
            _pem(ec.generate_private_key(ec.SECP256R1())),
            "the key must be an Ed25519 key",
        ),
        (
            _pem(Ed25519PrivateKey.generate(), serialization.BestAvailableEncryption(b"pw")),
            "the key is an encrypted PEM; give it unencrypted",
        ),
    ],
)
def test_an_unreadable_private_key_is_a_clear_value_error(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="^the key") as refused:
        load_private_key(text)
    assert str(refused.value) == message


def test_the_derived_key_is_stable_for_one_secret_and_differs_between_secrets() -> None:
    def key_id(secret: str) -> str:
        return Attester(derived_key(secret)).key_id

    assert key_id("a" * 32) == key_id("a" * 32)
    assert key_id("a" * 32) != key_id("b" * 32)


def test_importing_the_module_loads_neither_the_database_nor_settings_nor_the_web_framework() -> None:
    script = (
        "import sys, console.attestation; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'sqlalchemy', 'pydantic_settings', 'pydantic', 'fastapi', 'starlette', 'console.audit'}))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    audit = "import sys, console.attestation; print('console.audit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", audit], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
