"""Per-user credentials for MCP servers, encrypted at rest with AES-GCM under a key from the console's secret.

The same cipher seals servers' own header and environment values (`console/mcp/secrets.py`).

Each row is bound to its (user, server) pair as associated data, so a ciphertext copied onto another
row does not decrypt. `kind` is "bearer" for a typed-in token and "oauth" for an OAuth grant, whose
tokens and non-secret facts (`details_json`) console/oauth/grants.py keeps.
"""

from __future__ import annotations

import base64
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.db import utcnow
from console.errors import ConsoleError, InvalidInput
from console.identity.models import ServerCredential

MAX_SECRET_CHARS = 8192


class SecretMissing(ConsoleError):
    code = "secret_missing"


class CredentialCipher:
    """AES-256-GCM with a key derived (HKDF-SHA256) from the console secret."""

    def __init__(self, console_secret: str | None) -> None:
        if not console_secret:
            self._aead: AESGCM | None = None
            return
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"approval-console/server-credentials/v1"
        ).derive(console_secret.encode())
        self._aead = AESGCM(key)

    @property
    def ready(self) -> bool:
        """Whether a console secret is configured, so that values can be sealed and opened."""
        return self._aead is not None

    def _require(self) -> AESGCM:
        if self._aead is None:
            raise SecretMissing(
                "set CONSOLE_SECRET_KEY to store or use server secrets and personal credentials"
            )
        return self._aead

    def seal(self, secret: str, *, user_id: str, server_id: str) -> str:
        return self.seal_bound(secret, f"{user_id}:{server_id}")

    def open(self, sealed: str, *, user_id: str, server_id: str) -> str:
        return self.open_bound(sealed, f"{user_id}:{server_id}")

    def seal_bound(self, secret: str, bound_to: str) -> str:
        """`secret` encrypted so that it opens only with the same `bound_to` (the associated data)."""
        nonce = secrets.token_bytes(12)
        sealed = self._require().encrypt(nonce, secret.encode(), bound_to.encode())
        return base64.b64encode(nonce + sealed).decode()

    def open_bound(self, sealed: str, bound_to: str) -> str:
        """The value `seal_bound` sealed with the same `bound_to`.

        Raises:
            SecretMissing: no console secret, or the value was sealed under another secret or binding.
        """
        raw = base64.b64decode(sealed)
        try:
            plain = self._require().decrypt(raw[:12], raw[12:], bound_to.encode())
        except InvalidTag:
            raise SecretMissing(
                "a stored credential cannot be decrypted (was the console secret changed?)"
            ) from None
        return plain.decode()


async def save_credential(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    actor: Actor,
    user_id: str,
    server_id: str,
    secret: str,
) -> None:
    """Store (or replace) the user's credential for the server, encrypted; the value never reaches a log.

    Raises:
        InvalidInput: empty or oversized value.  SecretMissing: no console secret configured.
    """
    secret = secret.strip()
    if not secret or len(secret) > MAX_SECRET_CHARS:
        raise InvalidInput("invalid credential", {"secret": f"must be 1 to {MAX_SECRET_CHARS} characters"})
    sealed = cipher.seal(secret, user_id=user_id, server_id=server_id)
    row = await _row(session, user_id, server_id)
    now = utcnow()
    if row is None:
        session.add(
            ServerCredential(
                user_id=user_id,
                server_id=server_id,
                kind="bearer",
                sealed=sealed,
                created_at=now,
                updated_at=now,
            )
        )
    else:
        row.sealed, row.updated_at = sealed, now
    record_event(
        session=session,
        actor=actor,
        action="credential_saved",
        subject_type="server",
        subject_id=server_id,
        payload={"user": user_id, "kind": "bearer"},
    )


async def delete_credential(*, session: AsyncSession, actor: Actor, user_id: str, server_id: str) -> None:
    await session.execute(
        delete(ServerCredential).where(
            ServerCredential.user_id == user_id, ServerCredential.server_id == server_id
        )
    )
    record_event(
        session=session,
        actor=actor,
        action="credential_deleted",
        subject_type="server",
        subject_id=server_id,
        payload={"user": user_id},
    )


async def forget_server_credentials(*, session: AsyncSession, server_id: str) -> list[str]:
    """Delete every user's credential for the server inside the caller's transaction; whose they were."""
    query = select(ServerCredential.user_id).where(ServerCredential.server_id == server_id)
    users = list((await session.execute(query)).scalars())
    await session.execute(delete(ServerCredential).where(ServerCredential.server_id == server_id))
    return users


async def credential_for(
    *, session: AsyncSession, cipher: CredentialCipher, user_id: str, server_id: str
) -> str | None:
    """The user's own typed-in credential for the server, decrypted, or None when they have none (an
    OAuth grant, console/oauth/grants.py, is not one)."""
    row = await _row(session, user_id, server_id)
    if row is None or row.kind != "bearer":
        return None
    return cipher.open(row.sealed, user_id=user_id, server_id=server_id)


async def saved_servers(*, session: AsyncSession, user_id: str) -> dict[str, ServerCredential]:
    """The user's credential rows by server id (no secrets opened)."""
    rows = (
        await session.execute(select(ServerCredential).where(ServerCredential.user_id == user_id))
    ).scalars()
    result = {row.server_id: row for row in rows}
    return result


async def _row(session: AsyncSession, user_id: str, server_id: str) -> ServerCredential | None:
    query = select(ServerCredential).where(
        ServerCredential.user_id == user_id, ServerCredential.server_id == server_id
    )
    return (await session.execute(query)).scalar_one_or_none()
