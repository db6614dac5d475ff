"""Ed25519 keys for signing checkpoints: made by `console audit keygen`, read from configuration."""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from console.config import Settings
from console.errors import InvalidInput


@dataclass(frozen=True)
class Signer:
    """The checkpoint key and how often to use it."""

    key: Ed25519PrivateKey
    every: int
    minutes: float

    @property
    def public_text(self) -> str:
        return public_key_text(self.key.public_key())

    @property
    def key_id(self) -> str:
        return key_id(self.key.public_key())

    def sign(self, message: bytes) -> str:
        return base64.b64encode(self.key.sign(message)).decode()


def new_private_key_text() -> str:
    """A fresh key as base64 of its 32 raw bytes (the form CONSOLE_AUDIT_SIGNING_KEY takes)."""
    raw = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    return base64.b64encode(raw).decode()


def load_private_key(text: str) -> Ed25519PrivateKey:
    """A private key from PEM (PKCS#8) or base64 of the 32 raw bytes.

    Raises:
        InvalidInput: neither form, or not an Ed25519 key.
    """
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_private_key(text.encode(), password=None)
        except ValueError:
            raise InvalidInput("the audit signing key is not a readable PEM private key") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise InvalidInput("the audit signing key must be an Ed25519 key")
        return key
    return Ed25519PrivateKey.from_private_bytes(_raw32(text, "audit signing key"))


def load_public_key(text: str) -> Ed25519PublicKey:
    """A public key from PEM or base64 of the 32 raw bytes.

    Raises:
        InvalidInput: neither form, or not an Ed25519 key.
    """
    text = text.strip()
    if text.startswith("-----BEGIN"):
        try:
            key = serialization.load_pem_public_key(text.encode())
        except ValueError:
            raise InvalidInput("the public key is not readable PEM") from None
        if not isinstance(key, Ed25519PublicKey):
            raise InvalidInput("the public key must be an Ed25519 key")
        return key
    return Ed25519PublicKey.from_public_bytes(_raw32(text, "public key"))


def _raw32(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"the {what} is neither PEM nor base64") from None
    if len(raw) != 32:
        raise InvalidInput(f"the {what} must be 32 bytes (base64), got {len(raw)}")
    return raw


def public_key_text(key: Ed25519PublicKey) -> str:
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def key_id(key: Ed25519PublicKey) -> str:
    """The first 16 hex digits of the SHA-256 of the raw public key."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def signature_valid(key: Ed25519PublicKey, message: bytes, signature: str) -> bool:
    try:
        key.verify(base64.b64decode(signature, validate=True), message)
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def signer_from(settings: Settings) -> Signer | None:
    """The configured checkpoint signer, or None when no key is configured (checkpoints are then off).

    Raises:
        InvalidInput: a key is configured but unreadable.
    """
    text: str | None = None
    if settings.audit_signing_key is not None:
        text = settings.audit_signing_key.get_secret_value()
    elif settings.audit_signing_key_file is not None:
        text = Path(settings.audit_signing_key_file).read_text()
    if text is None:
        return None
    return Signer(load_private_key(text), settings.audit_checkpoint_every, settings.audit_checkpoint_minutes)
