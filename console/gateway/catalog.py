"""What an agent sees at `/mcp` (every enabled server of its team, names prefixed) or `/mcp/<server>`
(one server, names unchanged), and which server each name or resource URI belongs to."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.endpoints import CredentialMissing, endpoint_for_owner
from console.config import Settings
from console.errors import McpError
from console.gateway.names import gateway_name
from console.identity import Principal
from console.identity.credentials import SecretMissing
from console.mcp.connection import Listing
from console.mcp.endpoint import Endpoint
from console.mcp.pool import ConnectionPool
from console.mcp.registry import list_servers, server_by_name
from console.mcp.sealed import Outbound

logger = logging.getLogger(__name__)

LIST_SECONDS = 15.0  # one server that does not answer leaves the others' listing whole


@dataclass(frozen=True)
class Upstream:
    name: str
    endpoint: Endpoint


@dataclass(frozen=True)
class Entry:
    upstream: Upstream
    item: dict[str, Any]  # as the server listed it

    @property
    def upstream_name(self) -> str:
        return str(self.item.get("name", ""))


@dataclass
class Catalog:
    prefixed: bool  # names are `<server>__<name>` (at /mcp) rather than the server's own
    servers: list[Upstream] = field(default_factory=list)  # every server the caller reaches here
    tools: dict[str, Entry] = field(default_factory=dict)
    prompts: dict[str, Entry] = field(default_factory=dict)
    resources: dict[str, Entry] = field(default_factory=dict)
    templates: list[Entry] = field(default_factory=list)

    def shown(self, kind: Listing) -> list[dict[str, Any]]:
        """The listing as the agent sees it."""
        if kind == "resources":
            return [entry.item for entry in self.resources.values()]
        if kind == "resourceTemplates":
            return [entry.item for entry in self.templates]
        named = self.tools if kind == "tools" else self.prompts
        return [{**entry.item, "name": name} for name, entry in named.items()]

    def server_of_uri(self, uri: str) -> Upstream | None:
        """The server that listed the resource, else the one whose template's fixed start fits it best."""
        listed = self.resources.get(uri)
        if listed is not None:
            return listed.upstream
        fitting = [
            (len(start), entry.upstream)
            for entry in self.templates
            if (start := str(entry.item.get("uriTemplate", "")).split("{", 1)[0]) and uri.startswith(start)
        ]
        return max(fitting, key=lambda fit: fit[0])[1] if fitting else None


async def upstreams(
    *, session: AsyncSession, principal: Principal, settings: Settings, only: str | None
) -> list[Upstream]:
    """The servers the caller may reach here, each as the caller's own endpoint; a server that wants a
    credential the caller has not saved is left out (it says why when called by name at /mcp/<server>).

    Raises:
        NotFound, Conflict (disabled): `only` names no enabled server of the team.
    """
    outbound = Outbound.of(settings)
    if only is not None:
        servers = [await server_by_name(session=session, team_id=principal.team_id, name=only)]
    else:
        servers = [
            s for s in await list_servers(session=session, team_id=principal.team_id) if not s.disabled
        ]
    found: list[Upstream] = []
    for server in servers:
        try:
            endpoint = await endpoint_for_owner(
                session=session,
                outbound=outbound,
                server=server,
                owner_id=principal.user_id,
                owner_name=principal.user_name,
            )
        except (CredentialMissing, SecretMissing):
            continue
        found.append(Upstream(server.name, endpoint))
    await session.commit()  # listing asks the servers: hold no transaction meanwhile
    return found


async def build_catalog(
    *, pool: ConnectionPool, servers: list[Upstream], prefixed: bool, kinds: Iterable[Listing]
) -> Catalog:
    """Ask every server for its listings at once; one that fails is left out and logged."""
    catalog = Catalog(prefixed=prefixed, servers=list(servers))
    wanted = tuple(kinds)
    results: dict[tuple[int, Listing], list[dict[str, Any]]] = {}

    async def list_one(index: int, upstream: Upstream, kind: Listing) -> None:
        try:
            with anyio.fail_after(LIST_SECONDS):
                results[(index, kind)] = await pool.listing(upstream.endpoint, kind)
        except (McpError, TimeoutError) as exc:
            logger.warning(
                "gateway: %s did not list its %s: %s", upstream.name, kind, getattr(exc, "message", exc)
            )

    async with anyio.create_task_group() as tg:
        for index, upstream in enumerate(servers):
            for kind in wanted:
                tg.start_soon(list_one, index, upstream, kind)
    for index, upstream in enumerate(servers):  # in the servers' order, whatever answered first
        for kind in wanted:
            for item in results.get((index, kind), []):
                _add(catalog, kind, Entry(upstream, item))
    return catalog


def _add(catalog: Catalog, kind: Listing, entry: Entry) -> None:
    if kind == "resourceTemplates":
        catalog.templates.append(entry)
        return
    if kind == "resources":
        catalog.resources.setdefault(str(entry.item.get("uri", "")), entry)
        return
    named = catalog.tools if kind == "tools" else catalog.prompts
    name = gateway_name(entry.upstream.name, entry.upstream_name) if catalog.prefixed else entry.upstream_name
    if name in named:
        logger.warning("gateway: %s %r of %s hidden: the name is taken", kind, name, entry.upstream.name)
        return
    named[name] = entry
