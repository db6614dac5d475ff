"""What the roots forms show and send: the team's default (team page) and each server's own (its page)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession
from starlette.datastructures import FormData

from console.errors import InvalidInput
from console.identity.viewer import Viewer
from console.mcp.admin_roots import set_roots, team_roots
from console.mcp.roots import parse_root_lines, root_lines
from console.transactions import commit, rollback


async def roots_context(
    session: AsyncSession, by: Viewer, team_name: str, server_name: str | None = None
) -> dict[str, Any]:
    """The stored roots as lines, and for a server whether it takes the team's default (and which)."""
    shown = await team_roots(session=session, by=by, team_name=team_name)
    if server_name is None:
        return {"roots_text": root_lines(shown.default), "roots_error": None}
    own = shown.servers.get(server_name)
    return {
        "roots_text": root_lines(own),
        "roots_inherit": own is None,
        "team_default": shown.default,
        "roots_error": None,
    }


async def save_roots_form(
    session: AsyncSession, by: Viewer, team_name: str, server_name: str | None, form: FormData
) -> dict[str, Any] | None:
    """Save what the form says (the request's unit of work commits); None when saved, else what the form
    shows again (what was typed, and the error). A server's form may leave its roots to the team's
    default."""
    value = form.get("roots")
    text = value if isinstance(value, str) else ""
    inherit = server_name is not None and form.get("inherit") == "on"
    try:
        roots = None if inherit else parse_root_lines(text)
        await set_roots(session=session, by=by, team_name=team_name, server_name=server_name, roots=roots)
    except InvalidInput as exc:
        await rollback(session)
        shown = await roots_context(session, by, team_name, server_name)
        return {**shown, "roots_text": text, "roots_inherit": inherit, "roots_error": _first(exc)}
    await commit(session)
    return None


def _first(error: InvalidInput) -> str:
    return next(iter(error.fields.values()), error.message)
