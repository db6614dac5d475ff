"""Idempotency keys of agent requests (the `Idempotency-Key` header, as payment APIs have it).

A request that creates something (a run, a call, an answer) may carry a key of its caller's choosing. The
key is remembered with a fingerprint of the request (method, path, body) and what it created, in the
transaction that creates it, so either both are there or neither is. A retry with the same key and the
same request gets what the first one created, never a second one; the same key with another request is
refused. Two requests with one key at once: the second one's transaction fails on the key's uniqueness
and rolls back, and it is answered like a retry. Keys are per person and live 24 hours.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.db import utcnow
from console.errors import InvalidInput
from console.identity.models import MAX_IDEMPOTENCY_KEY as MAX_KEY
from console.identity.models import IdempotentRequest

HEADER = "Idempotency-Key"
KEEP = timedelta(hours=24)


@dataclass(frozen=True)
class Keyed:
    """A request that carries a key."""

    user_id: str
    key: str
    fingerprint: str

    def remember(self, session: AsyncSession, resource_type: str, resource_id: str) -> None:
        """Add the key, with what the request created, to the caller's transaction."""
        session.add(
            IdempotentRequest(
                user_id=self.user_id,
                key=self.key,
                fingerprint=self.fingerprint,
                resource_type=resource_type,
                resource_id=resource_id,
            )
        )


def keyed(user_id: str, header: str | None, method: str, target: str, body: bytes) -> Keyed | None:
    """The request's key, if it has one; `target` names what the request is for (its path, and whatever
    else tells two requests apart), `body` is the request's body as sent.

    Raises:
        InvalidInput: the key is empty, too long, or not printable ASCII.
    """
    if header is None:
        return None
    if not 0 < len(header) <= MAX_KEY or not all(" " < c <= "~" for c in header):
        raise InvalidInput(
            "invalid idempotency key", {HEADER: f"1 to {MAX_KEY} printable ASCII characters, no spaces"}
        )
    digest = hashlib.sha256()
    for part in (method.encode(), target.encode(), body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return Keyed(user_id, header, digest.hexdigest())


async def created_before(session: AsyncSession, request: Keyed, resource_type: str) -> str | None:
    """The id of what an earlier request with this key created (None: the key is new, or expired).

    Raises:
        InvalidInput: the key was used with another request.
    """
    await session.execute(
        delete(IdempotentRequest).where(
            IdempotentRequest.user_id == request.user_id, IdempotentRequest.created_at < utcnow() - KEEP
        )
    )
    row = (
        await session.execute(
            select(IdempotentRequest).where(
                IdempotentRequest.user_id == request.user_id, IdempotentRequest.key == request.key
            )
        )
    ).scalar_one_or_none()
    if row is None:
        return None
    if row.fingerprint != request.fingerprint or row.resource_type != resource_type:
        raise InvalidInput(
            "idempotency key reused",
            {HEADER: "was used with another request (keys are kept 24 hours): choose a new key"},
        )
    return row.resource_id
