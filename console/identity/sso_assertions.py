"""The ID token of each person's latest single sign-on, kept sealed for enterprise-managed authorization:
the console presents it to the same OpenID provider to get an identity assertion grant for an MCP server
(console/oauth/enterprise.py), so the person never sees a consent page of their own.

It opens only for its person (AES-GCM bound to them) and only until it expires; a sign-in through another
provider, or a password sign-in, does not replace it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from console.db import utcnow
from console.identity.credentials import CredentialCipher
from console.identity.models import SsoAssertion

# An ID token this close to its expiry is not presented: the exchange and the grant after it take time.
EXPIRY_MARGIN = timedelta(seconds=30)
MAX_ID_TOKEN_CHARS = 16_384


def _binding(user_id: str) -> str:
    return f"sso-id-token:{user_id}"


async def keep_assertion(
    *,
    session: AsyncSession,
    cipher: CredentialCipher,
    user_id: str,
    issuer: str,
    id_token: str,
    expires_at: datetime,
) -> None:
    """Keep (or replace) the person's ID token, inside the caller's transaction; an oversized one is not
    kept.

    Raises:
        SecretMissing: no console secret to seal it with.
    """
    if len(id_token) > MAX_ID_TOKEN_CHARS:
        return
    row = await session.get(SsoAssertion, user_id)
    if row is None:
        row = SsoAssertion(user_id=user_id)
        session.add(row)
    row.issuer, row.expires_at, row.saved_at = issuer, expires_at, utcnow()
    row.sealed = cipher.seal_bound(id_token, _binding(user_id))


async def current_assertion(
    *, session: AsyncSession, cipher: CredentialCipher, user_id: str, issuer: str
) -> str | None:
    """The person's ID token from `issuer` while it is still good for an exchange, else None.

    Raises:
        SecretMissing: the console secret changed since it was kept.
    """
    row = await session.get(SsoAssertion, user_id)
    if row is None or row.issuer != issuer or row.expires_at - EXPIRY_MARGIN <= utcnow():
        return None
    return cipher.open_bound(row.sealed, _binding(user_id))
