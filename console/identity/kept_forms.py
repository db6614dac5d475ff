"""A form's content held on a browser session while its owner confirms who they are (step-up).

A person who answers and is then sent to re-authenticate must not come back to an empty form. What they
sent is kept on their own web session row (never in a URL or a cookie): one form per session, for one
subject (a question id), for a short while, handed back once and only to that same live session.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.db import utcnow
from console.identity.models import WebSession

KEPT_FOR = timedelta(minutes=15)  # long enough for a sign-in at the identity provider and back


async def keep_form(
    *, session: AsyncSession, web_session_id: str | None, subject: str, content: dict[str, Any]
) -> None:
    """Hold `content` for `subject` on a live session, replacing whatever it held before."""
    if web_session_id is None:
        return
    await session.execute(
        update(WebSession)
        .where(WebSession.id == web_session_id, WebSession.revoked_at.is_(None))
        .values(
            kept_form_for=subject[:100],
            kept_form_json=json.dumps(content, ensure_ascii=False),
            kept_form_at=utcnow(),
        )
    )


async def take_kept_form(
    *, session: AsyncSession, web_session_id: str | None, subject: str
) -> dict[str, Any] | None:
    """The content this live session kept for `subject` in the last few minutes; gone once taken."""
    if web_session_id is None:
        return None
    mine = (
        WebSession.id == web_session_id,
        WebSession.revoked_at.is_(None),
        WebSession.kept_form_for == subject,
    )
    row = (
        await session.execute(select(WebSession.kept_form_json, WebSession.kept_form_at).where(*mine))
    ).one_or_none()
    if row is None:
        return None
    kept_json, kept_at = row
    # Conditional on what was read: of two tabs taking it at once, only one gets it.
    taken = await session.execute(
        update(WebSession)
        .where(*mine, WebSession.kept_form_at == kept_at)
        .values(kept_form_for=None, kept_form_json=None, kept_form_at=None)
    )
    recent = kept_at is not None and utcnow() - kept_at <= KEPT_FOR
    if taken.rowcount != 1 or not recent:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        return None
    content = json.loads(kept_json or "null")
    return content if isinstance(content, dict) else None
