"""What an agent sees at `/mcp` (every enabled server of its team, names prefixed) or `/mcp/<server>`
(one server, names unchanged), and which server each name or resource URI belongs to.

A name is never given to whichever server listed it first: one that two items would share (possible
only with a server name `mcp/names.py` now refuses, or a server whose own names meet), or that is the
console's own, is withheld and logged; so is a resource URI that two servers list or whose templates fit,
and a resource template that a URI of another server's template could also fit.
"""

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
from console.identity import Principal
from console.identity.credentials import SecretMissing
from console.mcp.connection import Listing
from console.mcp.endpoint import Endpoint
from console.mcp.names import gateway_name, is_own
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
    withheld: set[tuple[Listing, str]] = field(default_factory=set)  # names and URIs two items share

    def shown(self, kind: Listing) -> list[dict[str, Any]]:
        """The listing as the agent sees it."""
        if kind == "resources":
            return [entry.item for entry in self.resources.values()]
        if kind == "resourceTemplates":
            return [entry.item for entry in self.templates if not self.shared(entry)]
        named = self.tools if kind == "tools" else self.prompts
        return [{**entry.item, "name": name} for name, entry in named.items()]

    def server_of_uri(self, uri: str) -> Upstream | None:
        """The server that listed the resource, else the one whose templates' fixed starts fit it; None
        when two servers list it, or fit it and none lists it (it is read at /mcp/<server>)."""
        if ("resources", uri) in self.withheld:
            return None
        listed = self.resources.get(uri)
        if listed is not None:
            return listed.upstream
        fitting = self._fitting(uri)
        return next(iter(fitting.values())) if len(fitting) == 1 else None

    def unrouted(self, uri: str) -> str:
        """Why `server_of_uri` found no server for the URI."""
        if ("resources", uri) in self.withheld or self._fitting(uri):
            return f"more than one server here lists {uri!r}: ask one of them at /mcp/<server>"
        return f"no server here lists the resource {uri!r}"

    def _fitting(self, uri: str) -> dict[str, Upstream]:
        """The servers with a template whose fixed start the URI begins with."""
        return {
            entry.upstream.name: entry.upstream
            for entry in self.templates
            if (start := _fixed_start(entry)) and uri.startswith(start)
        }

    def shared(self, template: Entry) -> bool:
        """Whether a URI this template makes could fit another server's template too (one fixed start
        begins the other), so that reading it here would reach neither."""
        start = _fixed_start(template)
        return any(
            other.upstream.name != template.upstream.name
            and (start.startswith(other_start) or other_start.startswith(start))
            for other in self.templates
            for other_start in (_fixed_start(other),)
        )


def _fixed_start(template: Entry) -> str:
    """A template's URI up to its first expression: every URI it makes begins with it."""
    return str(template.item.get("uriTemplate", "")).split("{", 1)[0]


async def upstreams(
    *, session: AsyncSession, principal: Principal, settings: Settings, only: str | None
) -> list[Upstream]:
    """The servers the caller may reach here, each as the caller's own endpoint; a server that wants a
    credential the caller has not saved is left out (it says why when called by name at /mcp/<server>).
    Listing asks the servers: the caller ends its transaction first.

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
    for template in catalog.templates:
        if catalog.shared(template):
            logger.warning(
                "gateway: template %r of %s withheld: another server's template fits its URIs",
                template.item.get("uriTemplate"),
                template.upstream.name,
            )
    return catalog


def _add(catalog: Catalog, kind: Listing, entry: Entry) -> None:
    if kind == "resourceTemplates":
        catalog.templates.append(entry)
        return
    server = entry.upstream.name
    if kind == "resources":
        named, name, item = catalog.resources, str(entry.item.get("uri", "")), ""
    else:
        named = catalog.tools if kind == "tools" else catalog.prompts
        name = item = entry.upstream_name
        if catalog.prefixed:
            name = gateway_name(server, item)
        if is_own(name):
            logger.warning("gateway: %s %r of %s withheld: the name is the console's own", kind, name, server)
            return
    held = named.get(name)
    if (kind, name) in catalog.withheld:
        logger.warning("gateway: %s %r of %s withheld: the name is ambiguous", kind, name, server)
    elif held is None:
        named[name] = entry
    elif held.upstream.name != server or (kind != "resources" and held.upstream_name != item):
        del named[name]
        catalog.withheld.add((kind, name))
        logger.warning(
            "gateway: %s %r of %s and of %s withheld: the name is ambiguous (see console servers list)",
            kind,
            name,
            held.upstream.name,
            server,
        )
