"""The console's attestation key, chosen from configuration.

It is never the audit signing key: a leaked audit key must not let anyone forge approvals, nor a leaked
attestation key forge audit checkpoints. It lives in identity, the lowest layer that may read the audit
signing key (`console.audit.signing`) to refuse it, so every layer above that signs or publishes
attestations (mcp, calls, dispatch, web) can use it.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from console.attestation import Attester, derived_key, load_private_key, load_public_key
from console.audit.signing import signer_from
from console.config import Settings, secret_text
from console.errors import ConsoleError, InvalidInput


def attester_from(settings: Settings) -> Attester | None:
    """The attester of CONSOLE_APPROVAL_SIGNING_KEY, else of a key derived from CONSOLE_SECRET_KEY; None
    when neither is set (attestations are then off). Its key set also lists the public keys of
    CONSOLE_APPROVAL_PREVIOUS_KEYS.

    Raises:
        ConsoleError: a configured key is unreadable, or the approval key is the audit key, in one line
            naming the setting.
    """
    if settings.approval_signing_key is not None:
        try:
            key = load_private_key(settings.approval_signing_key.get_secret_value())
        except ValueError as exc:
            raise ConsoleError(f"invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: {exc}") from None
        if _same(key.public_key(), _audit_key(settings)):
            raise ConsoleError(
                "invalid settings: CONSOLE_APPROVAL_SIGNING_KEY: it is the audit signing key; "
                "give approval attestations a key of their own (`console audit keygen` makes one)"
            )
    else:
        secret = secret_text(settings)
        if secret is None:
            return None
        key = derived_key(secret)
    return Attester(key, previous=_previous_keys(settings))


def _audit_key(settings: Settings) -> Ed25519PublicKey | None:
    try:
        signer = signer_from(settings)
    except OSError as exc:
        raise ConsoleError(
            f"invalid settings: CONSOLE_AUDIT_SIGNING_KEY_FILE: cannot read it ({exc.strerror or exc})"
        ) from None
    except InvalidInput as exc:
        raise ConsoleError(f"invalid settings: {exc.message}") from None
    return None if signer is None else signer.key.public_key()


def _previous_keys(settings: Settings) -> list[Ed25519PublicKey]:
    keys: list[Ed25519PublicKey] = []
    for n, text in enumerate(settings.approval_previous_keys.split(","), start=1):
        if not text.strip():
            continue
        try:
            keys.append(load_public_key(text))
        except ValueError as exc:
            raise ConsoleError(f"invalid settings: CONSOLE_APPROVAL_PREVIOUS_KEYS: key {n}: {exc}") from None
    return keys


def _same(key: Ed25519PublicKey, other: Ed25519PublicKey | None) -> bool:
    raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
    return other is not None and key.public_bytes(*raw) == other.public_bytes(*raw)
