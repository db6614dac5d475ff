"""The roots an agent's own client lists on its 2025-11-25 gateway session, kept per session so that the
console process that sends the session's calls, whichever it is, answers the server's `roots/list` on
that session's connection with them (console/mcp/pool.py).

What a client lists is untrusted: a root `check_root` refuses (any scheme but `file://`, which MCP does
not allow either) is left out, and a list longer than `MAX_ROOTS` is refused whole rather than cut, so
that a server is never told a part of them as if it were all.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.db import utcnow
from console.errors import InvalidInput
from console.mcp.models import AgentRoots
from console.mcp.roots import MAX_ROOTS, Root, check_root, dump_roots, load_roots

logger = logging.getLogger(__name__)


def agents_roots(listed: Any) -> tuple[Root, ...]:
    """The roots of a client's `ListRootsResult` (as JSON) that may be kept, without repeats.

    Raises:
        InvalidInput: on field `roots`, when the result is no list of roots or lists more than `MAX_ROOTS`.
    """
    items = listed.get("roots") if isinstance(listed, dict) else None
    if not isinstance(items, list):
        raise InvalidInput("invalid roots", {"roots": "the client's roots/list result has no list of roots"})
    if len(items) > MAX_ROOTS:
        raise InvalidInput(
            "invalid roots", {"roots": f"at most {MAX_ROOTS} roots, the client listed {len(items)}"}
        )
    kept: dict[str, Root] = {}
    for item in items:
        uri = item.get("uri") if isinstance(item, dict) else None
        name = item.get("name") if isinstance(item, dict) else None
        try:
            root = check_root(uri if isinstance(uri, str) else "", name if isinstance(name, str) else None)
        except ValueError as exc:
            logger.info("gateway: an agent's root was left out: %s", exc)
            continue
        kept.setdefault(root.uri, root)
    return tuple(kept.values())


async def keep_agent_roots(
    *, session: AsyncSession, session_id: str, user_id: str, roots: tuple[Root, ...]
) -> None:
    """Keep `roots` as the agent's on its gateway session (replacing what was kept)."""
    row = await session.get(AgentRoots, session_id)
    if row is None:
        session.add(AgentRoots(session_id=session_id, user_id=user_id, roots_json=dump_roots(roots) or "[]"))
    elif row.user_id == user_id:  # a session id is the SDK's own and random; never someone else's row
        row.roots_json, row.updated_at = dump_roots(roots) or "[]", utcnow()


async def roots_of_agent(*, session: AsyncSession, session_id: str, user_id: str) -> tuple[Root, ...] | None:
    """The roots kept for the user's agent on the session; None when none are kept."""
    query = select(AgentRoots.roots_json).where(
        AgentRoots.session_id == session_id, AgentRoots.user_id == user_id
    )
    text = (await session.execute(query)).scalar_one_or_none()
    return None if text is None else load_roots(text)


async def forget_agent_roots(*, session: AsyncSession, session_id: str) -> None:
    """The session ended: its roots are kept no longer."""
    await session.execute(delete(AgentRoots).where(AgentRoots.session_id == session_id))
