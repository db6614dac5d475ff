"""Hearing what the team's servers say changed, for the agents that asked: a 2026-07-28 agent with its
own `subscriptions/listen` stream, a 2025-11-25 session with `resources/subscribe`.

The console listens to each server concerned (`subscriptions/listen`, MCP 2026-07-28) for as long as the
agent does, asking only for what the agent asked and may see: resource URIs are routed to the server
that lists them, as reads are. A stream the server drops is opened again; since changes may have been
missed meanwhile, each resource and listing it covered is then reported changed once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

import anyio
import mcp.types as types
from anyio.abc import TaskStatus
from mcp import MCPError
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
    event_matches,
)

from console.errors import McpError
from console.gateway.catalog import Catalog, Upstream
from console.mcp.pool import ConnectionPool

logger = logging.getLogger(__name__)

Deliver = Callable[[ServerEvent], Awaitable[None]]
FIRST_PAUSE_SECONDS = 1.0  # before a dropped stream is opened again; doubling up to the last
LAST_PAUSE_SECONDS = 30.0
MAX_URIS = 100  # resources one agent's stream or session may hear of (each is asked of a server)
NOTHING = types.SubscriptionFilter()


@dataclass(frozen=True)
class Source:
    """One server, and what to hear from it."""

    upstream: Upstream
    wanted: types.SubscriptionFilter


def sources(catalog: Catalog, servers: Iterable[Upstream], asked: types.SubscriptionFilter) -> list[Source]:
    """What to ask each server for: every listing change asked for from each of `servers`, and each
    resource URI from the server that lists it (a URI no server here lists is heard from none)."""
    uris: dict[str, list[str]] = {}
    for uri in dict.fromkeys(asked.resource_subscriptions or ()):
        upstream = catalog.server_of_uri(uri)
        if upstream is not None:
            uris.setdefault(upstream.name, []).append(uri)
    found = []
    for upstream in servers:
        wanted = types.SubscriptionFilter(
            tools_list_changed=asked.tools_list_changed or None,
            prompts_list_changed=asked.prompts_list_changed or None,
            resources_list_changed=asked.resources_list_changed or None,
            resource_subscriptions=uris.get(upstream.name) or None,
        )
        if wanted != NOTHING:
            found.append(Source(upstream, wanted))
    return found


def merged(filters: Iterable[types.SubscriptionFilter]) -> types.SubscriptionFilter:
    """What the servers together agreed to tell."""
    kept = list(filters)
    uris = [uri for f in kept for uri in f.resource_subscriptions or ()]
    return types.SubscriptionFilter(
        tools_list_changed=any(f.tools_list_changed for f in kept) or None,
        prompts_list_changed=any(f.prompts_list_changed for f in kept) or None,
        resources_list_changed=any(f.resources_list_changed for f in kept) or None,
        resource_subscriptions=list(dict.fromkeys(uris)) or None,
    )


async def hear(
    pool: ConnectionPool,
    source: Source,
    deliver: Deliver,
    *,
    task_status: TaskStatus[types.SubscriptionFilter] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Pass what the server says changed to `deliver` until cancelled. Started with what the server
    agreed to tell (nothing, and this returns, when it cannot be heard: an older protocol, no listen)."""
    started = False
    missed = False
    pause = FIRST_PAUSE_SECONDS
    while True:
        try:
            async with pool.listen(source.upstream.endpoint, source.wanted) as subscription:
                honored = _within(subscription.honored, source.wanted)
                honored_uris = frozenset(honored.resource_subscriptions or ())
                if not started:
                    task_status.started(honored)
                    started = True
                if missed:
                    for event in _everything_in(honored):
                        await deliver(event)
                pause = FIRST_PAUSE_SECONDS
                async for event in subscription:
                    if not event_matches(honored, honored_uris, event):  # what nobody here asked for
                        continue
                    if not isinstance(event, ResourceUpdated):
                        pool.forget_listings(source.upstream.endpoint)
                    await deliver(event)
                return  # the server ended the stream on purpose: it will tell no more
        except (McpError, MCPError, SubscriptionLost, TimeoutError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            if not started:
                logger.info("gateway: %s cannot tell of changes: %s", source.upstream.name, reason)
                task_status.started(NOTHING)
                return
            logger.info("gateway: listening to %s again in %.0f s: %s", source.upstream.name, pause, reason)
        missed = True
        await anyio.sleep(pause)
        pause = min(pause * 2, LAST_PAUSE_SECONDS)


def _everything_in(honored: types.SubscriptionFilter) -> list[ServerEvent]:
    events: list[ServerEvent] = [ResourceUpdated(uri) for uri in honored.resource_subscriptions or ()]
    if honored.tools_list_changed:
        events.append(ToolsListChanged())
    if honored.prompts_list_changed:
        events.append(PromptsListChanged())
    if honored.resources_list_changed:
        events.append(ResourcesListChanged())
    return events


def _within(honored: types.SubscriptionFilter, wanted: types.SubscriptionFilter) -> types.SubscriptionFilter:
    """What the server agreed to, of what it was asked (a server may not widen a subscription)."""
    asked = set(wanted.resource_subscriptions or ())
    return types.SubscriptionFilter(
        tools_list_changed=(honored.tools_list_changed and wanted.tools_list_changed) or None,
        prompts_list_changed=(honored.prompts_list_changed and wanted.prompts_list_changed) or None,
        resources_list_changed=(honored.resources_list_changed and wanted.resources_list_changed) or None,
        resource_subscriptions=[u for u in honored.resource_subscriptions or () if u in asked] or None,
    )
