"""People's email addresses, where notifications go: set by an operator (`console users add/edit
--email`) or taken from single sign-on's `email` claim at each sign-in."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.errors import InvalidInput, NotFound
from console.identity.models import User

MAX_EMAIL = 254  # RFC 5321's limit on a path
# One @, something on each side, a dot in the domain; no spaces, quotes, angle brackets or controls.
ADDRESS = re.compile(r"[^@\s\"<>()\[\],;:\\]+@[^@\s\"<>()\[\],;:\\]+\.[^@\s\"<>()\[\],;:\\.]+")


def clean_email(text: str) -> str | None:
    """The address, trimmed, or None when it is not a plain address."""
    address = text.strip()
    if len(address) > MAX_EMAIL or not ADDRESS.fullmatch(address) or not address.isprintable():
        return None
    return address


def email_from_claims(claims: Mapping[str, Any]) -> str | None:
    """The `email` claim, unless the provider says it is not verified."""
    value = claims.get("email")
    if not isinstance(value, str) or claims.get("email_verified") is False:
        return None
    return clean_email(value)


async def set_email(*, session: AsyncSession, name: str, email: str) -> None:
    """Set (or, with "", clear) the person's address.

    Raises:
        NotFound: no such user.  InvalidInput: not a plain address.
    """
    address = clean_email(email) if email else None
    if email and address is None:
        raise InvalidInput("not an email address", {"email": "a plain address such as ada@example.com"})
    user = (await session.execute(select(User).where(User.name == name))).scalar_one_or_none()
    if user is None:
        raise NotFound(f"no user {name!r}")
    user.email = address
    record_event(
        session=session,
        actor=SYSTEM,
        action="email_set",
        subject_type="user",
        subject_id=user.id,
        payload={"user": name, "set": address is not None},
    )


@dataclass(frozen=True)
class EmailChoice:
    address: str | None
    on: bool


async def email_choice(*, session: AsyncSession, user_id: str) -> EmailChoice:
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound("no such user")
    return EmailChoice(user.email, user.email_notifications)


async def set_email_notifications(*, session: AsyncSession, actor: Actor, user_id: str, on: bool) -> None:
    """Turn the person's email notifications on or off."""
    user = await session.get(User, user_id)
    if user is None:
        raise NotFound("no such user")
    user.email_notifications = on
    record_event(
        session=session,
        actor=actor,
        action="email_notifications_set",
        subject_type="user",
        subject_id=user.id,
        payload={"user": user.name, "on": on},
    )
