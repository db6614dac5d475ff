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
    AttestationRefused,
    Attester,
    Claims,
    Decision,
    Question,
    UsedAttestations,
    arguments_digest,
    derived_key,
    jwks,
    load_private_key,
    load_public_key,
    unverified_claims,
    verify,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
DECIDED = NOW - timedelta(minutes=2)
DECISIONS = (Decision("lead", "accept", DECIDED - timedelta(minutes=1)), Decision("lead2", "cosign", DECIDED))
GATE = (Question("gate", 2, DECISIONS),)
PARAMS: dict[str, Any] = {"name": "deploy", "arguments": {"env": "production", "replicas": 3}}
CONSOLE_KEY = Attester(derived_key("console-secret-" + "s" * 32))
KEYS = jwks(CONSOLE_KEY.public_jwk())
ISSUER = "https://console.example"
AUDIENCE = "https://deploy.example/mcp"
FOR_US = {"issuer": ISSUER, "audience": AUDIENCE}  # what every server passes verify about itself


def attest(
    attester: Attester = CONSOLE_KEY, params: dict[str, Any] = PARAMS, **overrides: Any
) -> dict[str, Any]:
    """The `_meta` of a request dev's agent made, sent after lead and lead2 approved it at its gate."""
    values: dict[str, Any] = {
        "issuer": ISSUER,
        "audience": AUDIENCE,
        "call_id": "call-1",
        "server": "deployer",
        "method": "tools/call",
        "params": params,
        "kind": "gate",
        "requester": "dev",
        "questions": GATE,
        "rule": "rule-7",
        "decided_at": DECIDED,
        "minutes": 10,
        "now": NOW,
    }
    return {APPROVAL_META: attester.sign(**{**values, **overrides})}


def claims_of(meta: Any, params: dict[str, Any] = PARAMS, **options: Any) -> Claims:
    return verify(meta, KEYS, params, **{"now": NOW, **FOR_US, **options})


def refusal(meta: Any, params: dict[str, Any] = PARAMS, **options: Any) -> str:
    with pytest.raises(AttestationRefused) as refused:
        claims_of(meta, params, **options)
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
    claims = claims_of(meta, method="tools/call", server="deployer", kind="gate", min_approvers=2)
    assert claims == Claims(
        issuer=ISSUER,
        audience=AUDIENCE,
        token_id=payload_of(meta)["jti"],
        issued_at=NOW,
        expires_at=NOW + timedelta(minutes=10),
        call_id="call-1",
        server="deployer",
        method="tools/call",
        name="deploy",
        arguments_sha256=arguments_digest(PARAMS),
        asked_arguments_sha256=arguments_digest(PARAMS),
        edited_by=None,
        kind="gate",
        requester="dev",
        questions=GATE,
        rule="rule-7",
        decided_at=DECIDED,
    )
    assert claims.approvers == ("lead", "lead2")


def test_the_payload_is_the_documented_public_format() -> None:
    meta = attest()
    header = json.loads(base64.urlsafe_b64decode(meta[APPROVAL_META].split(".")[0] + "=="))
    assert header == {"alg": "EdDSA", "typ": "approval+jwt", "kid": CONSOLE_KEY.key_id}
    payload = payload_of(meta)
    assert len(payload.pop("jti")) >= 16
    digest = hashlib.sha256(b'{"env":"production","replicas":3}').hexdigest()
    assert payload == {
        "v": 2,
        "iss": "https://console.example",
        "aud": "https://deploy.example/mcp",
        "iat": int(NOW.timestamp()),
        "exp": int(NOW.timestamp()) + 600,
        "call": "call-1",
        "server": "deployer",
        "method": "tools/call",
        "name": "deploy",
        "args_sent_sha256": digest,
        "args_asked_sha256": digest,
        "edited_by": None,
        "kind": "gate",
        "requester": "dev",
        "questions": [
            {
                "key": "gate",
                "required": 2,
                "decisions": [
                    {"by": "lead", "action": "accept", "at": "2026-03-04T05:03:07Z"},
                    {"by": "lead2", "action": "cosign", "at": "2026-03-04T05:04:07Z"},
                ],
            }
        ],
        "rule": "rule-7",
        "decided_at": "2026-03-04T05:04:07Z",
    }


def test_edited_arguments_are_attested_as_sent_with_the_digest_of_what_the_agent_asked_and_the_editor() -> (
    None
):
    asked = {"name": "deploy", "arguments": {"env": "production", "replicas": 30}}
    meta = attest(asked=asked, edited_by="lead")
    claims = claims_of(meta)
    assert (claims.arguments_sha256, claims.asked_arguments_sha256) == (
        arguments_digest(PARAMS),
        arguments_digest(asked),
    )
    assert claims.edited_by == "lead"
    assert (
        payload_of(meta)["args_asked_sha256"]
        == hashlib.sha256(b'{"env":"production","replicas":30}').hexdigest()
    )
    # What the approvers approved is what verifies, never what the agent first asked for.
    assert refusal(meta, asked) == "the request's arguments differ from the arguments people approved"


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
    assert claims_of(meta, params, method="resources/read").name == "test://secrets/database"
    assert payload_of(meta)["args_sent_sha256"] == hashlib.sha256(b"{}").hexdigest()
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
    claims_of(attest(), now=expires + timedelta(seconds=30))
    assert refusal(attest(), now=expires + timedelta(seconds=31)) == (
        "the attestation expired at 2026-03-04T05:16:07Z"
    )
    assert refusal(attest(), now=expires + timedelta(seconds=1), leeway_seconds=0).startswith(
        "the attestation expired"
    )


def test_an_attestation_not_yet_valid_is_refused_beyond_the_leeway() -> None:
    claims_of(attest(), now=NOW - timedelta(seconds=30))
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
    assert refusal(forged(header, {**payload, "v": 1}, console_key.sign)) == (
        "the attestation is of version 1; this code reads 2"
    )
    assert refusal(forged(header, {**payload, "exp": "soon"}, console_key.sign)) == (
        "the attestation's payload has no valid exp"
    )
    for questions in (
        [],
        [{"key": "gate", "required": 0, "decisions": []}],
        [{"key": "gate", "decisions": []}],
    ):
        assert refusal(forged(header, {**payload, "questions": questions}, console_key.sign)) == (
            "the attestation's payload has no valid questions"
        )
    lone = [{"key": "gate", "required": 1, "decisions": [{"by": "lead"}]}]
    assert refusal(forged(header, {**payload, "questions": lone}, console_key.sign)) == (
        "the attestation's payload has no valid questions"
    )
    without_audience = {k: v for k, v in payload.items() if k != "aud"}
    assert refusal(forged(header, without_audience, console_key.sign)) == (
        "the attestation's payload has no valid aud"
    )
    assert refusal(forged(header, {**payload, "method": "tools/list"}, console_key.sign)) == (
        "the attestation is for 'tools/list', which is not attested"
    )
    assert refusal(forged(header, {**payload, "kind": "approval"}, console_key.sign)) == (
        "the attestation is of the kind 'approval', which is not attested"
    )
    wrong_type = {**header, "typ": "JWT"}
    assert refusal(forged(wrong_type, payload, console_key.sign)) == (
        "the token's type is 'JWT', not 'approval+jwt'"
    )


def test_the_same_attestation_verified_twice_is_a_replay() -> None:
    seen = UsedAttestations()
    meta = attest()
    claims_of(meta, seen=seen)
    token_id = payload_of(meta)["jti"]
    assert refusal(meta, seen=seen) == f"the attestation {token_id} was used already (a replay)"


def test_an_attestation_of_one_call_is_a_replay_for_another_call_with_the_same_params() -> None:
    seen = UsedAttestations()
    call_a = attest(call_id="call-a")
    assert claims_of(call_a, seen=seen).call_id == "call-a"
    assert refusal(call_a, dict(PARAMS), seen=seen).endswith("was used already (a replay)")
    call_b = attest(call_id="call-b")
    assert claims_of(call_b, seen=seen).call_id == "call-b"


def test_a_refused_attestation_is_not_used_up() -> None:
    seen = UsedAttestations()
    meta = attest()
    refusal(meta, {"name": "destroy"}, seen=seen)
    refusal(meta, audience="https://elsewhere.example/mcp", seen=seen)
    claims_of(meta, seen=seen)


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
    assert claims_of(attest(rule=None)).rule is None


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


def test_an_attestation_issued_by_another_console_is_refused() -> None:
    assert refusal(attest(issuer="https://staging-console.example")) == (
        "the attestation was issued by 'https://staging-console.example', not 'https://console.example'"
    )


def test_an_attestation_for_a_same_named_server_elsewhere_is_refused_by_its_audience() -> None:
    """A hostile server registered as "deployer" in another team, or at another URL, gets attestations
    naming the same server and tool: only the audience tells them from this server's own."""
    hostile = attest(audience="urn:approval-console:server:0f1e2d3c")
    assert payload_of(hostile)["server"] == "deployer"
    assert refusal(hostile, server="deployer") == (
        "the attestation is for the audience 'urn:approval-console:server:0f1e2d3c', "
        "not 'https://deploy.example/mcp'"
    )


def test_verify_cannot_be_called_without_the_audience_or_the_issuer() -> None:
    with pytest.raises(TypeError, match="audience"):
        verify(attest(), KEYS, PARAMS, issuer=ISSUER, now=NOW)  # type: ignore[call-arg]  # the point
    with pytest.raises(TypeError, match="issuer"):
        verify(attest(), KEYS, PARAMS, audience=AUDIENCE, now=NOW)  # type: ignore[call-arg]  # the point


def test_another_kind_of_decision_is_refused_when_the_server_says_which() -> None:
    answered = attest(kind="answer", questions=(Question("target", 2, DECISIONS),))
    assert claims_of(answered, kind="answer").kind == "answer"
    assert refusal(answered, kind="gate") == (
        "the attestation records an answer to the server's question, not an approval at the console's gate"
    )
    assert refusal(attest(), kind="answer") == (
        "the attestation records an approval at the console's gate, not an answer to the server's question"
    )


def test_one_approver_is_refused_where_two_are_required() -> None:
    one = attest(questions=(Question("gate", 1, (Decision("lead", "accept", DECIDED),)),))
    assert claims_of(one).approvers == ("lead",)
    assert refusal(one, min_approvers=2) == (
        "the attestation records 1 approver (lead) besides the requester dev; 2 are required"
    )


def test_the_same_person_signing_twice_counts_once() -> None:
    twice = (Decision("lead", "accept", DECIDED), Decision("lead", "cosign", DECIDED))
    assert refusal(attest(questions=(Question("gate", 2, twice),)), min_approvers=2) == (
        "the attestation records 1 approver (lead) besides the requester dev; 2 are required"
    )


def test_the_requesters_own_answer_claims_no_approval() -> None:
    own = attest(kind="answer", questions=(Question("target", 1, (Decision("dev", "accept", DECIDED),)),))
    assert claims_of(own, min_approvers=0).approvers == ()
    assert refusal(own) == "the attestation records 0 approvers besides the requester dev; 1 is required"
    assert refusal(own, kind="answer", min_approvers=2) == (
        "the attestation records 0 approvers besides the requester dev; 2 are required"
    )


def test_the_requester_approving_their_own_gate_is_not_an_approver() -> None:
    decisions = (Decision("dev", "accept", DECIDED), Decision("lead", "cosign", DECIDED))
    meta = attest(questions=(Question("gate", 2, decisions),))
    assert claims_of(meta).approvers == ("lead",)
    assert refusal(meta, min_approvers=2).startswith("the attestation records 1 approver (lead)")


def test_a_decline_or_cancel_is_no_approval() -> None:
    declined = (Decision("lead", "decline", DECIDED), Decision("lead2", "cancel", DECIDED))
    assert refusal(attest(questions=(Question("gate", 2, declined),))).startswith(
        "the attestation records 0 approvers"
    )


def test_approvers_of_several_questions_are_those_who_approved_every_one() -> None:
    first = Question("target", 2, DECISIONS)
    second = Question("reason", 1, (Decision("dev", "accept", DECIDED),))
    both = attest(kind="answer", questions=(first, second))
    assert refusal(both).startswith("the attestation records 0 approvers besides the requester dev")
    third = Question("window", 2, (Decision("lead2", "accept", DECIDED), Decision("ops", "cosign", DECIDED)))
    assert claims_of(attest(kind="answer", questions=(first, third))).approvers == ("lead2",)


def test_signing_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError, match="no kind of attestation 'approval'"):
        attest(kind="approval")


def test_the_console_reads_its_own_kept_attestation_without_the_keys() -> None:
    meta = attest()
    kept = unverified_claims(meta[APPROVAL_META])
    assert (kept.token_id, kept.expires_at) == (payload_of(meta)["jti"], NOW + timedelta(minutes=10))
    with pytest.raises(AttestationRefused):
        unverified_claims("not-a-jws")


def test_after_a_rotation_the_key_set_still_lists_the_previous_key_and_its_attestations_verify() -> None:
    rotated = Attester(
        Ed25519PrivateKey.generate(), previous=[load_public_key(CONSOLE_KEY.public_jwk()["x"])]
    )
    keys = rotated.key_set()
    assert [key["kid"] for key in keys["keys"]] == [rotated.key_id, CONSOLE_KEY.key_id]
    assert keys["keys"][1] == CONSOLE_KEY.public_jwk()
    before = attest()  # signed with the previous key
    assert (
        verify(before, keys, PARAMS, now=NOW, issuer=ISSUER, audience=AUDIENCE).token_id
        == payload_of(before)["jti"]
    )
    after = attest(rotated)
    assert (
        verify(after, keys, PARAMS, now=NOW, issuer=ISSUER, audience=AUDIENCE).token_id
        == payload_of(after)["jti"]
    )


def test_public_keys_load_from_either_base64_alphabet_and_refuse_anything_else() -> None:
    raw = base64.urlsafe_b64decode(CONSOLE_KEY.public_jwk()["x"] + "=")
    standard, url = base64.b64encode(raw).decode(), b64url(raw)
    assert load_public_key(standard) == load_public_key(url) == load_public_key(f" {url}==\n")
    with pytest.raises(ValueError, match="^the key is not base64$"):
        load_public_key("not a key!")
    with pytest.raises(ValueError, match=r"^the key must be 32 bytes \(base64\), got 16$"):
        load_public_key(b64url(b"x" * 16))


def test_a_token_naming_no_key_is_refused() -> None:
    header = {"alg": "EdDSA", "typ": "approval+jwt"}
    meta = forged(header, payload_of(attest()), derived_key("console-secret-" + "s" * 32).sign)
    assert refusal(meta) == "the attestation names no key (kid)"


@pytest.mark.parametrize(
    ("published", "reason"),
    [
        ({"kty": "EC", "crv": "P-256"}, "is not an Ed25519 signing key for EdDSA"),
        ({"use": "enc"}, "is not an Ed25519 signing key for EdDSA"),
        ({"alg": "ES256"}, "is not an Ed25519 signing key for EdDSA"),
        ({"x": "AAAA"}, "is not a readable Ed25519 public key"),
    ],
    ids=["another key type", "not for signing", "another algorithm", "not 32 bytes"],
)
def test_a_published_key_that_is_not_an_ed25519_signing_key_is_refused(
    published: dict[str, str], reason: str
) -> None:
    keys = jwks({**CONSOLE_KEY.public_jwk(), **published})
    with pytest.raises(AttestationRefused) as refused:
        verify(attest(), keys, PARAMS, now=NOW, issuer=ISSUER, audience=AUDIENCE)
    assert refused.value.reason == f"the console's key {CONSOLE_KEY.key_id} {reason}"


def test_a_signed_payload_that_is_not_a_json_object_is_refused() -> None:
    header = {"alg": "EdDSA", "typ": "approval+jwt", "kid": CONSOLE_KEY.key_id}
    key = derived_key("console-secret-" + "s" * 32)
    for payload, reason in ((b"{not json", "is not JSON"), (b"[1, 2]", "is not a JSON object")):
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(payload)}"
        meta = {APPROVAL_META: f"{signing_input}.{b64url(key.sign(signing_input.encode()))}"}
        assert refusal(meta) == f"the attestation's payload {reason}"


def test_arguments_without_a_json_form_are_refused() -> None:
    params = {"name": "deploy", "arguments": {"replicas": float("nan")}}
    assert refusal(attest(), params) == "the request's arguments have no JSON form"
