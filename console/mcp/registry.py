"""Registered servers: adding, listing and turning a row into an endpoint."""

from __future__ import annotations

import json
import shlex
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.db import flush_unique
from console.errors import Conflict, InvalidInput, NotFound
from console.mcp.endpoint import Endpoint
from console.mcp.models import McpServer


async def add_server(
    *,
    session: AsyncSession,
    team_id: str,
    name: str,
    command: str | None = None,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    per_user_credential: str | None = None,
) -> McpServer:
    """Register a stdio server (`command`, split like a shell would) or an HTTP server (`url`).

    Raises:
        InvalidInput: neither or both of command and url, or a URL that is not http(s).
        Conflict: the team already has a server of that name.
    """
    if (command is None) == (url is None):
        raise InvalidInput("give exactly one of command or url")
    server = McpServer(team_id=team_id, name=name, env_json=json.dumps(env or {}))
    if per_user_credential is not None:
        server.credential_mode, server.credential_name = "per_user", per_user_credential
    if command is not None:
        argv = shlex.split(command)
        if not argv:
            raise InvalidInput("command is empty")
        server.transport, server.command_json = "stdio", json.dumps(argv)
    elif url is not None:
        if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
            raise InvalidInput("url must be an http(s) URL")
        server.transport, server.url, server.headers_json = "http", url, json.dumps(headers or {})
    session.add(server)
    await flush_unique(session, f"server {name!r} already exists in this team")
    record_event(
        session=session,
        actor=SYSTEM,
        action="server_added",
        subject_type="server",
        subject_id=server.id,
        payload={"name": name, "transport": server.transport, "where": endpoint_for(server).describe()},
    )
    await session.commit()
    return server


async def list_servers(*, session: AsyncSession, team_id: str | None = None) -> list[McpServer]:
    query = select(McpServer).order_by(McpServer.name)
    if team_id is not None:
        query = query.where(McpServer.team_id == team_id)
    return list((await session.execute(query)).scalars())


async def server_by_name(*, session: AsyncSession, team_id: str, name: str) -> McpServer:
    """An enabled server of the team.

    Raises:
        NotFound: no such server.  Conflict: an admin disabled it.
    """
    query = select(McpServer).where(McpServer.team_id == team_id, McpServer.name == name)
    server = (await session.execute(query)).scalar_one_or_none()
    if server is None:
        raise NotFound(f"no server {name!r}")
    if server.disabled:
        raise Conflict(f"server {name!r} is disabled; a team admin can enable it again")
    return server


def endpoint_for(server: McpServer, credential: str | None = None) -> Endpoint:
    """How to reach the server; with `credential`, as the one user it belongs to (per-user servers)."""
    env: dict[str, str] = json.loads(server.env_json)
    headers: dict[str, str] = json.loads(server.headers_json)
    if credential is not None and server.credential_mode == "per_user":
        name = server.credential_name or ("Authorization" if server.transport == "http" else "MCP_TOKEN")
        if server.transport == "http":
            headers[name] = f"Bearer {credential}" if name.lower() == "authorization" else credential
        else:
            env[name] = credential
    if server.transport == "stdio":
        return Endpoint.stdio(json.loads(server.command_json or "[]"), env)
    return Endpoint.http(server.url or "", headers)


async def per_user_servers(*, session: AsyncSession, team_ids: list[str]) -> list[McpServer]:
    """The enabled servers of these teams that want each user's own credential."""
    query = (
        select(McpServer)
        .where(McpServer.team_id.in_(team_ids), McpServer.credential_mode == "per_user", ~McpServer.disabled)
        .order_by(McpServer.name)
    )
    servers = list((await session.execute(query)).scalars())
    await session.commit()
    return servers
