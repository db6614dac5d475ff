"""The roots a team's servers are told of: the team's default, and each server's own (which replaces the
default; an empty list of its own means the server gets no roots at all). A root names a place in the
console's file system (MCP roots are the client's), which a stdio server on the console's host may then
work in: only site admins and the operator set them (console/identity/host_settings.py); the team's
admins see them. Every change is audited."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.errors import NotFound
from console.identity.host_settings import only_site_admin
from console.identity.models import Team
from console.identity.teams import actor_of, require_team_admin
from console.identity.viewer import Viewer
from console.mcp.models import McpServer
from console.mcp.roots import Root, check_roots, dump_roots, load_roots


@dataclass(frozen=True)
class TeamRoots:
    team: str
    default: tuple[Root, ...]
    servers: dict[str, tuple[Root, ...] | None]  # by server name; None: the team's default applies


async def roots_for_server(*, session: AsyncSession, server: McpServer) -> tuple[Root, ...]:
    """The roots a server is told of: its own, else its team's default (the team is read once per
    session, however many of its servers are asked about)."""
    own = load_roots(server.roots_json)
    if own is not None:
        return own
    team = await session.get(Team, server.team_id)
    return (load_roots(team.default_roots_json) if team is not None else None) or ()


async def team_roots(*, session: AsyncSession, by: Viewer | None, team_name: str) -> TeamRoots:
    """The team's default roots and each server's own, for its admins.

    Raises:
        NotFound, Forbidden.
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    query = select(McpServer.name, McpServer.roots_json).where(McpServer.team_id == team.id)
    servers = {name: load_roots(text) for name, text in (await session.execute(query)).all()}
    return TeamRoots(team.name, load_roots(team.default_roots_json) or (), dict(sorted(servers.items())))


async def set_roots(
    *,
    session: AsyncSession,
    by: Viewer | None,
    team_name: str,
    server_name: str | None,
    roots: list[Root] | None,
) -> None:
    """Set the team's default roots (`server_name` None) or one server's own; `roots` None clears them
    (a server then takes the team's default). Only a site admin (or the operator) may.

    Raises:
        NotFound, Forbidden (to a team admin: recorded as `access_refused`), InvalidInput (field `roots`).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    await only_site_admin(
        session=session,
        by=by,
        team_id=team.id,
        attempt="set roots",
        subject_type="team",
        subject_id=team.id,
        reason="only a site admin can set roots: they name places in the console's file system",
        server=server_name,
    )
    if roots is not None:
        check_roots(roots)
    if server_name is None:
        team.default_roots_json = dump_roots(roots) if roots else None
        subject_type, subject_id, action = "team", team.id, "team_roots_set"
    else:
        query = select(McpServer).where(McpServer.team_id == team.id, McpServer.name == server_name)
        server = (await session.execute(query)).scalar_one_or_none()
        if server is None:
            raise NotFound(f"no server {server_name!r} in {team_name}")
        server.roots_json = dump_roots(roots)
        subject_type, subject_id, action = "server", server.id, "server_roots_set"
    record_event(
        session=session,
        actor=actor_of(by),
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        payload={
            "team": team.name,
            "server": server_name,
            "roots": None if roots is None else [root.as_json() for root in roots],
        },
    )
