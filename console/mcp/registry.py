"""Registered servers: listing them and turning a row into an endpoint (servers are added in `admin.py`)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import AUDIENCE_VARIABLE
from console.errors import Conflict, NotFound
from console.mcp.endpoint import Endpoint
from console.mcp.models import McpServer
from console.mcp.roots import Root
from console.mcp.sealed import Outbound, open_values, stored_map


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
    return enabled_server((await session.execute(query)).scalar_one_or_none(), name)


def enabled_server(server: McpServer | None, name: str) -> McpServer:
    """The server found by `name`, if there is one and it is enabled.

    Raises:
        NotFound: no such server.  Conflict: an admin disabled it.
    """
    if server is None:
        raise NotFound(f"no server {name!r}")
    if server.disabled:
        raise Conflict(f"server {name!r} is disabled; a team admin can enable it again")
    return server


def describe_server(server: McpServer) -> str:
    """Where the server runs, for people and the audit log, without opening any stored value."""
    if server.transport == "stdio":
        return shlex.join(json.loads(server.command_json or "[]"))
    return Endpoint.http(server.url or "").describe()


def public_address(server: McpServer) -> str:
    """Where the server runs, for anyone in its team: an HTTP server's address; nothing for a stdio
    server, whose command line is the operator's (its arguments may hold what members must not read)."""
    return Endpoint.http(server.url or "").describe() if server.transport == "http" else ""


def audience_of(server: McpServer) -> str:
    """Who the approval attestations of the server's requests are for: an HTTP server's URL as
    registered (without user info, query or fragment), or a stdio server's own id in the console, which
    its process is given in AUDIENCE_VARIABLE. A server of the same name in another team, or at another
    URL, has another audience."""
    if server.transport == "http":
        return Endpoint.http(server.url or "").describe()
    return f"urn:approval-console:server:{server.id}"


def endpoint_for(
    server: McpServer,
    outbound: Outbound,
    credential: str | None = None,
    *,
    roots: tuple[Root, ...] = (),
    dpop_key: str = "",
) -> Endpoint:
    """How to reach the server, its stored values opened with the console's key; with `credential`, as the
    one user it belongs to (per-user and OAuth servers), telling it of `roots`. Unless the server is
    internal or the settings allow private addresses, the endpoint connects to public addresses only. A
    stdio server's environment also holds its attestation audience (`audience_of`).

    Raises:
        SecretMissing: a stored value cannot be opened (no key, or another key sealed it).
    """
    env = open_values(outbound.cipher, server.id, "env", stored_map(server.env_json))
    headers = open_values(outbound.cipher, server.id, "header", stored_map(server.headers_json))
    if (
        credential is not None
        and server.credential_mode in ("oauth", "oauth_team")
        and server.transport == "http"
    ):
        headers["Authorization"] = f"{'DPoP' if dpop_key else 'Bearer'} {credential}"
    elif credential is not None and server.credential_mode == "per_user":
        name = server.credential_name or ("Authorization" if server.transport == "http" else "MCP_TOKEN")
        if server.transport == "http":
            headers[name] = f"Bearer {credential}" if name.lower() == "authorization" else credential
        else:
            env[name] = credential
    if server.transport == "stdio":
        env[AUDIENCE_VARIABLE] = audience_of(server)  # the console's own word, over any stored value
        endpoint = Endpoint.stdio(json.loads(server.command_json or "[]"), env, roots=roots)
    else:
        public_only = outbound.public_only(server)
        endpoint = Endpoint.http(
            server.url or "", headers, public_only=public_only, roots=roots, dpop_key=dpop_key
        )
    return replace(endpoint, protocol=server.pinned_protocol)


async def per_user_servers(*, session: AsyncSession, team_ids: list[str]) -> list[McpServer]:
    """The enabled servers of these teams that want each user's own credential (typed in, or OAuth)."""
    query = (
        select(McpServer)
        .where(
            McpServer.team_id.in_(team_ids),
            McpServer.credential_mode.in_(("per_user", "oauth")),
            ~McpServer.disabled,
        )
        .order_by(McpServer.name)
    )
    servers = list((await session.execute(query)).scalars())
    return servers
