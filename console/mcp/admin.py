"""Team admins manage their MCP servers: add, edit, disable and enable, with every change audited.

Header and environment values may be credentials: they are stored, sent to the server, and never handed
back. `ServerSettings` read from a server carries their names with `None` values; `None` in an edit
keeps the value already stored.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.db import flush_unique
from console.errors import InvalidInput, NotFound
from console.identity.teams import MemberRow, actor_of, check_name, members_of, require_team_admin
from console.identity.viewer import Viewer
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for

HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
MAX_VALUE = 8192
RESERVED_NAMES = ("new",)  # /servers/new is the form for adding one


@dataclass(frozen=True)
class ServerSettings:
    """What an admin sets on a server; secret values are `None` when read back."""

    transport: str = "stdio"
    command: str = ""
    url: str = ""
    env: Mapping[str, str | None] = field(default_factory=dict)
    headers: Mapping[str, str | None] = field(default_factory=dict)
    credential_name: str = ""  # empty: shared settings; else each user's own credential under this name
    trusted: bool = False
    idempotent: bool = False


@dataclass(frozen=True)
class TeamOverview:
    team: str
    team_id: str
    members: list[MemberRow]
    servers: list[McpServer]


def settings_of(server: McpServer) -> ServerSettings:
    """The server's settings with every header and environment value left out."""
    return ServerSettings(
        transport=server.transport,
        command=shlex.join(json.loads(server.command_json or "[]")),
        url=server.url or "",
        env=dict.fromkeys(json.loads(server.env_json)),
        headers=dict.fromkeys(json.loads(server.headers_json)),
        credential_name=(server.credential_name or "") if server.credential_mode == "per_user" else "",
        trusted=server.trusted,
        idempotent=server.idempotent,
    )


async def team_overview(*, session: AsyncSession, by: Viewer | None, team_name: str) -> TeamOverview:
    """The team's members and servers (disabled ones included), for its admins.

    Raises:
        NotFound, Forbidden.
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    members = await members_of(session=session, team_id=team.id)
    query = select(McpServer).where(McpServer.team_id == team.id).order_by(McpServer.name)
    servers = list((await session.execute(query)).scalars())
    await session.commit()
    return TeamOverview(team.name, team.id, members, servers)


async def server_for_admin(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str
) -> McpServer:
    """One server of the team, disabled or not, for its admins.

    Raises:
        NotFound, Forbidden.
    """
    server = await _server(session, by, team_name, name)
    await session.commit()
    return server


async def create_server(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str, settings: ServerSettings
) -> McpServer:
    """Register a server in the team.

    Raises:
        NotFound, Forbidden, InvalidInput (with field errors), Conflict (name taken).
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    name = check_name("server", name)
    if name in RESERVED_NAMES:
        raise InvalidInput("invalid server name", {"name": f"{name!r} is reserved"})
    server = McpServer(team_id=team.id, name=name)
    changed = _apply(server, settings)
    session.add(server)
    await flush_unique(session, f"server {name!r} already exists in {team_name}")
    _record(session, by, "server_added", server, team_name, changed=changed)
    await session.commit()
    return server


async def edit_server(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str, settings: ServerSettings
) -> McpServer:
    """Change a server's settings; a header or environment value of `None` keeps the stored one.

    Raises:
        NotFound, Forbidden, InvalidInput (with field errors).
    """
    server = await _server(session, by, team_name, name)
    changed = _apply(server, settings)
    if changed:
        _record(session, by, "server_changed", server, team_name, changed=changed)
    await session.commit()
    return server


async def set_disabled(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str, disabled: bool
) -> McpServer:
    """Disable a server (new calls to it are refused; calls under way finish) or enable it again.

    Raises:
        NotFound, Forbidden.
    """
    server = await _server(session, by, team_name, name)
    if server.disabled != disabled:
        server.disabled = disabled
        _record(session, by, "server_disabled" if disabled else "server_enabled", server, team_name)
    await session.commit()
    return server


async def _server(session: AsyncSession, by: Viewer | None, team_name: str, name: str) -> McpServer:
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    query = select(McpServer).where(McpServer.team_id == team.id, McpServer.name == name)
    server = (await session.execute(query)).scalar_one_or_none()
    if server is None:
        await session.rollback()
        raise NotFound(f"no server {name!r} in {team_name}")
    return server


def _apply(server: McpServer, settings: ServerSettings) -> list[str]:
    """Validate `settings` and set them on `server`; the names of the fields that changed."""
    errors: dict[str, str] = {}
    before = _snapshot(server)
    env = _merge(json.loads(server.env_json or "{}"), settings.env, ENV_NAME, "env", errors)
    headers = _merge(
        json.loads(server.headers_json or "{}"), settings.headers, HEADER_NAME, "headers", errors
    )
    credential = settings.credential_name.strip()
    pattern = HEADER_NAME if settings.transport == "http" else ENV_NAME
    if credential and not pattern.fullmatch(credential):
        errors["credential_name"] = "not a valid header or environment variable name"
    command_json: str | None = None
    url: str | None = None
    if settings.transport == "stdio":
        try:
            argv = shlex.split(settings.command)
        except ValueError as exc:
            argv, errors["command"] = [], f"cannot split the command: {exc}"
        if not argv and "command" not in errors:
            errors["command"] = "give the program to run and its arguments"
        command_json, headers = json.dumps(argv), {}
    elif settings.transport == "http":
        url = settings.url.strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            errors["url"] = "must be an http(s) URL"
        env = {}
    else:
        errors["transport"] = "choose stdio or http"
    if errors:
        raise InvalidInput("the server settings are not valid", errors)
    # Only valid settings reach the row: a refused edit leaves nothing for a later flush to write.
    server.transport, server.command_json, server.url = settings.transport, command_json, url
    server.env_json, server.headers_json = json.dumps(env), json.dumps(headers)
    server.credential_mode = "per_user" if credential else "shared"
    server.credential_name = credential or None
    server.trusted, server.idempotent = settings.trusted, settings.idempotent
    after = _snapshot(server)
    return [key for key in after if before.get(key) != after[key]]


def _merge(
    old: dict[str, str],
    new: Mapping[str, str | None],
    pattern: re.Pattern[str],
    field_name: str,
    errors: dict[str, str],
) -> dict[str, str]:
    merged: dict[str, str] = {}
    for raw_name, value in new.items():
        name = raw_name.strip()
        if not pattern.fullmatch(name):
            errors[field_name] = f"{name!r} is not a valid name"
        elif value is None or value == "":
            if name not in old:
                errors[field_name] = f"give a value for {name}"
            else:
                merged[name] = old[name]
        elif len(value) > MAX_VALUE or any(c in value for c in "\r\n\0"):
            errors[field_name] = f"the value of {name} is too long or has line breaks"
        else:
            merged[name] = value
    return merged


def _snapshot(server: McpServer) -> dict[str, object]:
    return {
        "transport": server.transport,
        "command": server.command_json,
        "url": server.url,
        "env": server.env_json,
        "headers": server.headers_json,
        "credential": (server.credential_mode, server.credential_name),
        "trusted": server.trusted,
        "idempotent": server.idempotent,
    }


def _record(
    session: AsyncSession,
    by: Viewer | None,
    action: str,
    server: McpServer,
    team_name: str,
    changed: list[str] | None = None,
) -> None:
    payload: dict[str, object] = {"name": server.name, "team": team_name, "transport": server.transport}
    if changed is not None:
        payload["changed"] = changed
        payload["where"] = endpoint_for(server).describe()
        payload["env_names"] = sorted(json.loads(server.env_json))
        payload["header_names"] = sorted(json.loads(server.headers_json))
        payload["trusted"], payload["idempotent"] = server.trusted, server.idempotent
    record_event(
        session=session,
        actor=actor_of(by),
        action=action,
        subject_type="server",
        subject_id=server.id,
        payload=payload,
    )
