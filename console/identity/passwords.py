"""Password hashing with scrypt (memory-hard), verified in constant time."""

from __future__ import annotations

import base64
import hashlib
import secrets

from cryptography.exceptions import InvalidKey
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

N, R, P, LENGTH = 2**15, 8, 1, 32


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = Scrypt(salt=salt, length=LENGTH, n=N, r=R, p=P).derive(password.encode())
    return f"scrypt${N}${R}${P}${_b64(salt)}${_b64(digest)}"


def decoy_hash() -> str:
    """A hash at the current cost that no password verifies (its digest is random): checking a password
    against it costs the same scrypt work as against a real one, and making it costs none."""
    return f"scrypt${N}${R}${P}${_b64(secrets.token_bytes(16))}${_b64(secrets.token_bytes(LENGTH))}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
    except ValueError:
        return False
    if scheme != "scrypt":
        return False
    kdf = Scrypt(salt=_unb64(salt), length=len(_unb64(digest)), n=int(n), r=int(r), p=int(p))
    try:
        kdf.verify(password.encode(), _unb64(digest))
    except InvalidKey:
        return False
    return True


def new_token_secret() -> str:
    return "mcpc_" + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """API tokens are stored as SHA-256: they are 256-bit random, so a fast hash is enough."""
    return hashlib.sha256(token.encode()).hexdigest()


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
