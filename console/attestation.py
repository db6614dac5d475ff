"""Signed approval attestations: proof, inside an MCP request, that people approved it in the console.

When the console sends a request that people decided, `params._meta["io.approval-console/approval"]`
holds a compact JWS (RFC 7515) signed with the console's Ed25519 attestation key. The MCP server checks
it with `verify(params.get("_meta"), jwks, params, issuer=..., audience=..., seen=...)` against the keys
the console publishes at `<console base URL>/.well-known/jwks.json`.

Protected header: `{"alg": "EdDSA", "typ": "approval+jwt", "kid": <key id>}`, where the key id is the
RFC 7638 SHA-256 thumbprint (base64url) of the console's public key; nothing else is accepted in it.

Payload, a JSON object (version 2; a new version changes `v`):

    v                  2
    iss                the console's base URL (CONSOLE_BASE_URL)
    aud                the server it was issued for: an HTTP server's URL as registered, without user
                       info, query or fragment; for a stdio server "urn:approval-console:server:<id>",
                       which the console gives the process in its environment (AUDIENCE_VARIABLE)
    jti                the attestation's id: every send of one approved request carries the same one,
                       a resend after an interruption too, so a server accepts each id once
    iat, exp           issued at, expires at (integer seconds since the epoch)
    call               the console's id of the call
    server             the MCP server's name in the console (for people: `aud` is what a server checks)
    method             "tools/call", "prompts/get" or "resources/read"
    name               the tool or prompt name, or for resources/read the resource URI
    args_sent_sha256   hex SHA-256 of the RFC 8785 canonical JSON of params.arguments as sent ({} when
                       absent)
    args_asked_sha256  the same of the arguments the agent asked for: another value only when edited
    edited_by          null, or who changed the arguments at the gate (the approver whose accept
                       carried them)
    kind               "gate": people approved the call at the console's gate before it was sent;
                       "answer": people answered the server's own question, which this request answers
    requester          the user name of the person whose agent made the call
    questions          [{"key": question key, "required": approvals its policy required, "decisions":
                       [{"by": user name, "action": "accept", "cosign", "decline" or "cancel", "at": RFC
                       3339 time}, ...]}, ...]: every question decided, each person's decision in order
    rule               the id of the policy rule that asked, or null
    decided_at         RFC 3339 time at which the decisions were complete

The approvers an attestation vouches for (`Claims.approvers`) are the people other than the requester
who accepted or co-signed every question: a requester's own answer is never an approval.

Importing this module loads only the standard library, joserfc, cryptography and `console.canonical`,
so an MCP server can use it without the rest of the console.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from joserfc.errors import JoseError
from joserfc.jwa import EdDSAAlgorithm
from joserfc.jwk import OKPKey
from joserfc.jws import CompactSignature, JWSRegistry, extract_compact, serialize_compact, validate_compact

from console.canonical import canonical_bytes, loads

__all__ = [
    "ALGORITHM",
    "ANSWER",
    "APPROVAL_META",
    "APPROVING",
    "AUDIENCE_VARIABLE",
    "GATE",
    "HEADER_TYPE",
    "KINDS",
    "METHODS",
    "AttestationRefused",
    "Attester",
    "Claims",
    "Decision",
    "Question",
    "UnknownKey",
    "UsedAttestations",
    "arguments_digest",
    "derived_key",
    "jwks",
    "load_private_key",
    "load_public_key",
    "unverified_claims",
    "verify",
]

APPROVAL_META = "io.approval-console/approval"
# The environment variable in which the console tells a stdio server the audience it attests for it.
AUDIENCE_VARIABLE = "APPROVAL_CONSOLE_AUDIENCE"
ALGORITHM = "EdDSA"
HEADER_TYPE = "approval+jwt"
VERSION = 2
METHODS = ("tools/call", "prompts/get", "resources/read")
GATE, ANSWER = "gate", "answer"
KINDS = {GATE: "an approval at the console's gate", ANSWER: "an answer to the server's question"}
APPROVING = ("accept", "cosign")
DERIVATION_INFO = b"approval-console attestation v1"
HEADER_FIELDS = frozenset({"alg", "typ", "kid"})


class _EdDSA(EdDSAAlgorithm):
    # joserfc warns on every use that RFC 9864 prefers the fully specified "Ed25519" name; the format keeps
    # "EdDSA", which every JOSE library accepts today, so the warning would only be noise ("" turns it off).
    security_warning = ""


class _Registry(JWSRegistry):
    algorithms = {ALGORITHM: _EdDSA()}
    recommended = [ALGORITHM]


# The only algorithm signed or verified, whatever a token's header asks for.
_REGISTRY = _Registry(algorithms=[ALGORITHM])


class AttestationRefused(Exception):
    """The attestation does not prove that people approved this request; `reason` says why, in one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UnknownKey(AttestationRefused):
    """The attestation names a key the JWKS does not list: fetch the console's keys again (a rotation)
    before refusing it."""


@dataclass(frozen=True)
class Decision:
    """One person's decision on a question: "accept" (the answer), "cosign" (a co-signature of it),
    "decline" or "cancel"."""

    by: str
    action: str
    at: datetime


@dataclass(frozen=True)
class Question:
    """A decided question: its key, the approvals its policy required, and every decision on it."""

    key: str
    required: int
    decisions: tuple[Decision, ...]


@dataclass(frozen=True)
class Claims:
    """What an attestation says, as `verify` read it from the payload."""

    issuer: str
    audience: str
    token_id: str
    issued_at: datetime
    expires_at: datetime
    call_id: str
    server: str
    method: str
    name: str
    arguments_sha256: str  # of the arguments sent
    asked_arguments_sha256: str  # of the arguments the agent asked for
    edited_by: str | None
    kind: str
    requester: str
    questions: tuple[Question, ...]
    rule: str | None
    decided_at: datetime

    @property
    def approvers(self) -> tuple[str, ...]:
        """The people other than the requester who accepted or co-signed every question, in order."""
        if not self.questions:
            return ()
        each = [
            {d.by for d in q.decisions if d.action in APPROVING and d.by != self.requester}
            for q in self.questions
        ]
        every = set.intersection(*each)
        return tuple(dict.fromkeys(d.by for q in self.questions for d in q.decisions if d.by in every))


def arguments_digest(params: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the canonical JSON of `params["arguments"]`, `{}` when there are none.

    Raises:
        ValueError: the arguments have no JSON form (console.canonical.NotCanonicalizable).
    """
    arguments = params.get("arguments")
    return hashlib.sha256(canonical_bytes({} if arguments is None else arguments)).hexdigest()


class Attester:
    """The console's attestation key: signs attestations and publishes its public half, with the public
    keys it signed with before a rotation (`previous`) while attestations they signed may be valid."""

    def __init__(self, key: Ed25519PrivateKey, previous: Sequence[Ed25519PublicKey] = ()) -> None:
        private = key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
        )
        self._key = OKPKey.import_key(
            {"kty": "OKP", "crv": "Ed25519", "x": _public_x(key.public_key()), "d": _b64url(private)}
        )
        self.key_id: str = self._key.thumbprint()
        self._previous = tuple(_public_jwk(OKPKey.import_key(k)) for k in previous)

    def sign(
        self,
        *,
        issuer: str,
        audience: str,
        call_id: str,
        server: str,
        method: str,
        params: Mapping[str, Any],
        kind: str,
        requester: str,
        questions: Sequence[Question],
        rule: str | None,
        decided_at: datetime,
        minutes: float,
        asked: Mapping[str, Any] | None = None,
        edited_by: str | None = None,
        now: datetime | None = None,
    ) -> str:
        """The compact JWS attesting that people decided `questions` (of `kind`) for sending `method` with
        `params` to the server of `audience`, valid for `minutes` from `now`; `asked` are the agent's
        params when `edited_by` changed their arguments.

        Raises:
            ValueError: an unknown method or kind, params without the name or URI the method needs,
                arguments without a JSON form, or a datetime without a time zone.
        """
        if method not in METHODS:
            raise ValueError(f"cannot attest {method!r}: only {', '.join(METHODS)}")
        if kind not in KINDS:
            raise ValueError(f"no kind of attestation {kind!r}: only {', '.join(KINDS)}")
        name = params.get(_name_field(method))
        if not isinstance(name, str):
            raise ValueError(f"{method} params have no {_name_field(method)!r}")
        issued = int(_utc(now or datetime.now(UTC)).timestamp())
        sent = arguments_digest(params)
        payload = {
            "v": VERSION,
            "iss": issuer,
            "aud": audience,
            "jti": secrets.token_urlsafe(16),
            "iat": issued,
            "exp": issued + round(minutes * 60),
            "call": call_id,
            "server": server,
            "method": method,
            "name": name,
            "args_sent_sha256": sent,
            "args_asked_sha256": sent if asked is None else arguments_digest(asked),
            "edited_by": edited_by,
            "kind": kind,
            "requester": requester,
            "questions": [
                {
                    "key": q.key,
                    "required": q.required,
                    "decisions": [
                        {"by": d.by, "action": d.action, "at": _rfc3339(d.at)} for d in q.decisions
                    ],
                }
                for q in questions
            ],
            "rule": rule,
            "decided_at": _rfc3339(decided_at),
        }
        header = {"alg": ALGORITHM, "typ": HEADER_TYPE, "kid": self.key_id}
        return serialize_compact(header, canonical_bytes(payload), self._key, registry=_REGISTRY)

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK, as `/.well-known/jwks.json` lists it."""
        return dict(self._key.as_dict(private=False, kid=self.key_id, use="sig", alg=ALGORITHM))

    def key_set(self) -> dict[str, Any]:
        """The JWK Set a server verifies with: the current key first, then the previous ones."""
        return jwks(self.public_jwk(), *self._previous)


def jwks(*keys: Mapping[str, Any]) -> dict[str, Any]:
    """A JWK Set (RFC 7517) of the given public JWKs."""
    return {"keys": [dict(key) for key in keys]}


class UsedAttestations:
    """The token ids a server accepted, each kept until its attestation expires: one store per server
    process, shared by every request it verifies, holding at most `limit` ids (safe across threads)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._until: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._until)

    def record(self, token_id: str, *, until: datetime, now: datetime) -> bool:
        """Keep `token_id` until `until`; False when it is kept already (a replay).

        Raises:
            AttestationRefused: `limit` unexpired ids are kept; refusing beats forgetting one early.
        """
        with self._lock:
            moment = now.timestamp()
            while self._expiry and self._expiry[0][0] < moment:
                _, expired = heapq.heappop(self._expiry)
                del self._until[expired]
            if token_id in self._until:
                return False
            if len(self._until) >= self.limit:
                raise AttestationRefused(
                    f"{self.limit} unexpired attestations are remembered, so a replay could not be told"
                )
            self._until[token_id] = until.timestamp()
            heapq.heappush(self._expiry, (until.timestamp(), token_id))
            return True


def verify(
    meta: Mapping[str, Any] | None,
    jwks: Mapping[str, Any],
    params: Mapping[str, Any],
    *,
    issuer: str,
    audience: str,
    method: str | None = None,
    server: str | None = None,
    kind: str | None = None,
    min_approvers: int = 1,
    now: datetime | None = None,
    leeway_seconds: float = 30,
    seen: UsedAttestations | None = None,
) -> Claims:
    """The claims of the attestation in a request's `_meta`, once it proves that people approved exactly
    this request: signed by a key of `jwks`, unexpired, issued by `issuer` for `audience` (this server),
    for this name (or URI) and these arguments, by at least `min_approvers` people other than the
    requester, and for `method`, `server` (its name in the console) and `kind` when given. With `seen`,
    each attestation is accepted once.

    Raises:
        AttestationRefused: with the reason, when any of that does not hold.
    """
    token = None if meta is None else meta.get(APPROVAL_META)
    if token is None:
        raise AttestationRefused(f"the request carries no approval attestation (_meta {APPROVAL_META!r})")
    signed = _compact(token)
    header = signed.headers()
    if header.get("alg") != ALGORITHM:
        raise AttestationRefused(f"the attestation's algorithm is {header.get('alg')!r}, not {ALGORITHM!r}")
    if header.get("typ") != HEADER_TYPE:
        raise AttestationRefused(f"the token's type is {header.get('typ')!r}, not {HEADER_TYPE!r}")
    if not HEADER_FIELDS.issuperset(header):
        extra = ", ".join(sorted(set(header) - HEADER_FIELDS))
        raise AttestationRefused(f"the attestation's header has fields it may not have: {extra}")
    key = _key(header.get("kid"), jwks)
    try:
        valid = validate_compact(signed, key, registry=_REGISTRY)
    except JoseError:
        valid = False
    if not valid:
        raise AttestationRefused(f"the attestation's signature does not verify with key {header['kid']}")
    claims = _claims(signed.payload)
    now = _utc(now or datetime.now(UTC))
    leeway = timedelta(seconds=leeway_seconds)
    _check_time(claims, now=now, leeway=leeway)
    _check_parties(claims, issuer=issuer, audience=audience, server=server)
    _check_request(claims, params, method=method)
    _check_decision(claims, kind=kind, min_approvers=min_approvers)
    if seen is not None and not seen.record(claims.token_id, until=claims.expires_at + leeway, now=now):
        raise AttestationRefused(f"the attestation {claims.token_id} was used already (a replay)")
    return claims


def unverified_claims(token: str) -> Claims:
    """The claims of an attestation the console signed and kept itself, read without checking its
    signature: never use it on one a request carries.

    Raises:
        AttestationRefused: it is not an attestation of this version.
    """
    return _claims(_compact(token).payload)


def load_private_key(text: str) -> Ed25519PrivateKey:
    """An Ed25519 private key from PEM (PKCS#8) or from base64 of its 32 raw bytes.

    Raises:
        ValueError: neither form, or not an Ed25519 key; the message says which.
    """
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except TypeError:
            raise ValueError("the key is an encrypted PEM; give it unencrypted") from None
        except (ValueError, UnsupportedAlgorithm):
            raise ValueError("the key is not a readable PEM private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("the key must be an Ed25519 key")
        return key
    return Ed25519PrivateKey.from_private_bytes(_raw32(text, standard=True))


def load_public_key(text: str) -> Ed25519PublicKey:
    """An Ed25519 public key from base64 or base64url of its 32 raw bytes (a JWK's `x`).

    Raises:
        ValueError: not 32 bytes of either alphabet; the message says which.
    """
    return Ed25519PublicKey.from_public_bytes(_raw32(text.strip(), standard=False))


def derived_key(secret: str) -> Ed25519PrivateKey:
    """The Ed25519 key derived from the console's secret key (HKDF-SHA256): the same for the same secret."""
    hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=DERIVATION_INFO)
    return Ed25519PrivateKey.from_private_bytes(hkdf.derive(secret.encode("utf-8")))


def _raw32(text: str, *, standard: bool) -> bytes:
    try:
        if standard:
            raw = base64.b64decode(text, validate=True)
        else:
            unpadded = text.rstrip("=").replace("+", "-").replace("/", "_")
            raw = base64.b64decode(unpadded + "=" * (-len(unpadded) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            "the key is neither PEM nor base64" if standard else "the key is not base64"
        ) from None
    if len(raw) != 32:
        raise ValueError(f"the key must be 32 bytes (base64), got {len(raw)}")
    return raw


def _compact(token: object) -> CompactSignature:
    if not isinstance(token, str):
        raise AttestationRefused(f"the approval attestation is a {type(token).__name__}, not a compact JWS")
    try:
        signed = extract_compact(token.encode("ascii"), registry=_REGISTRY)
    except (JoseError, ValueError, TypeError):
        raise AttestationRefused("the approval attestation is not a well-formed compact JWS") from None
    if not isinstance(signed.headers(), dict):
        raise AttestationRefused("the approval attestation is not a well-formed compact JWS")
    return signed


def _key(kid: object, jwks: Mapping[str, Any]) -> OKPKey:
    if not isinstance(kid, str) or not kid:
        raise AttestationRefused("the attestation names no key (kid)")
    keys = jwks.get("keys")
    found = (
        [k for k in keys if isinstance(k, Mapping) and k.get("kid") == kid] if isinstance(keys, list) else []
    )
    if not found:
        raise UnknownKey(f"the attestation's key {kid} is not among the console's keys (JWKS)")
    jwk = found[0]
    x = jwk.get("x")
    if (
        not isinstance(x, str)
        or jwk.get("kty") != "OKP"
        or jwk.get("crv") != "Ed25519"
        or jwk.get("use", "sig") != "sig"
        or jwk.get("alg", ALGORITHM) != ALGORITHM
    ):
        raise AttestationRefused(f"the console's key {kid} is not an Ed25519 signing key for {ALGORITHM}")
    try:
        return OKPKey.import_key({"kty": "OKP", "crv": "Ed25519", "x": x})
    except (JoseError, ValueError, TypeError):
        raise AttestationRefused(f"the console's key {kid} is not a readable Ed25519 public key") from None


def _claims(payload: bytes) -> Claims:
    try:
        body = loads(payload.decode("utf-8"))
    except ValueError:
        raise AttestationRefused("the attestation's payload is not JSON") from None
    if not isinstance(body, dict):
        raise AttestationRefused("the attestation's payload is not a JSON object")
    if body.get("v") != VERSION or not isinstance(body.get("v"), int):
        raise AttestationRefused(
            f"the attestation is of version {body.get('v')!r}; this code reads {VERSION}"
        )
    try:
        claims = Claims(
            issuer=_text(body, "iss"),
            audience=_text(body, "aud"),
            token_id=_text(body, "jti"),
            issued_at=_epoch(body, "iat"),
            expires_at=_epoch(body, "exp"),
            call_id=_text(body, "call"),
            server=_text(body, "server"),
            method=_text(body, "method"),
            name=_text(body, "name"),
            arguments_sha256=_text(body, "args_sent_sha256"),
            asked_arguments_sha256=_text(body, "args_asked_sha256"),
            edited_by=None if body.get("edited_by") is None else _text(body, "edited_by"),
            kind=_text(body, "kind"),
            requester=_text(body, "requester"),
            questions=_questions(body),
            rule=None if body.get("rule") is None else _text(body, "rule"),
            decided_at=_time(body, "decided_at"),
        )
    except _Unreadable as exc:
        raise AttestationRefused(f"the attestation's payload has no valid {exc}") from None
    if claims.method not in METHODS:
        raise AttestationRefused(f"the attestation is for {claims.method!r}, which is not attested")
    if claims.kind not in KINDS:
        raise AttestationRefused(f"the attestation is of the kind {claims.kind!r}, which is not attested")
    return claims


class _Unreadable(Exception):
    """A payload field is missing or of the wrong type; the message names it."""


def _text(body: dict[str, Any], field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str):
        raise _Unreadable(field)
    return value


def _questions(body: dict[str, Any]) -> tuple[Question, ...]:
    items = body.get("questions")
    if not isinstance(items, list) or not items or not all(isinstance(item, dict) for item in items):
        raise _Unreadable("questions")
    try:
        return tuple(
            Question(key=_text(q, "key"), required=_count(q, "required"), decisions=_decisions(q))
            for q in items
        )
    except _Unreadable:
        raise _Unreadable("questions") from None


def _decisions(question: dict[str, Any]) -> tuple[Decision, ...]:
    items = question.get("decisions")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise _Unreadable("decisions")
    return tuple(Decision(by=_text(d, "by"), action=_text(d, "action"), at=_time(d, "at")) for d in items)


def _count(body: dict[str, Any], field: str) -> int:
    value = body.get(field)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _Unreadable(field)
    return value


def _time(body: dict[str, Any], field: str) -> datetime:
    try:
        moment = datetime.fromisoformat(_text(body, field))
    except ValueError:
        raise _Unreadable(field) from None
    if moment.tzinfo is None:
        raise _Unreadable(field)
    return moment.astimezone(UTC)


def _epoch(body: dict[str, Any], field: str) -> datetime:
    value = body.get(field)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _Unreadable(field)
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        raise _Unreadable(field) from None


def _check_time(claims: Claims, *, now: datetime, leeway: timedelta) -> None:
    if claims.expires_at + leeway < now:
        raise AttestationRefused(f"the attestation expired at {_rfc3339(claims.expires_at)}")
    if claims.issued_at - leeway > now:
        raise AttestationRefused(f"the attestation is not valid before {_rfc3339(claims.issued_at)}")


def _check_parties(claims: Claims, *, issuer: str, audience: str, server: str | None) -> None:
    if claims.issuer != issuer:
        raise AttestationRefused(f"the attestation was issued by {claims.issuer!r}, not {issuer!r}")
    if claims.audience != audience:
        raise AttestationRefused(f"the attestation is for the audience {claims.audience!r}, not {audience!r}")
    if server is not None and server != claims.server:
        raise AttestationRefused(f"the attestation is for the server {claims.server!r}, not {server!r}")


def _check_request(claims: Claims, params: Mapping[str, Any], *, method: str | None) -> None:
    if method is not None and method != claims.method:
        raise AttestationRefused(f"the attestation is for {claims.method}, not {method}")
    field = _name_field(claims.method)
    if params.get(field) != claims.name:
        raise AttestationRefused(
            f"the attestation approves the {field} {claims.name!r}, not {params.get(field)!r}"
        )
    try:
        digest = arguments_digest(params)
    except ValueError:
        raise AttestationRefused("the request's arguments have no JSON form") from None
    if digest != claims.arguments_sha256:
        raise AttestationRefused("the request's arguments differ from the arguments people approved")


def _check_decision(claims: Claims, *, kind: str | None, min_approvers: int) -> None:
    if kind is not None and kind != claims.kind:
        wanted = KINDS.get(kind, repr(kind))
        raise AttestationRefused(f"the attestation records {KINDS[claims.kind]}, not {wanted}")
    approvers = claims.approvers
    if len(approvers) < min_approvers:
        count = f"{len(approvers)} approver{'' if len(approvers) == 1 else 's'}"
        named = f" ({', '.join(approvers)})" if approvers else ""
        required = f"{min_approvers} {'is' if min_approvers == 1 else 'are'} required"
        raise AttestationRefused(
            f"the attestation records {count}{named} besides the requester {claims.requester}; {required}"
        )


def _name_field(method: str) -> str:
    return "uri" if method == "resources/read" else "name"


def _public_x(public: Ed25519PublicKey) -> str:
    return _b64url(public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw))


def _public_jwk(key: OKPKey) -> dict[str, Any]:
    return dict(key.as_dict(private=False, kid=key.thumbprint(), use="sig", alg=ALGORITHM))


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError("a datetime without a time zone is ambiguous; give it in UTC")
    return moment.astimezone(UTC)


def _rfc3339(moment: datetime) -> str:
    return _utc(moment).isoformat().replace("+00:00", "Z")


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
