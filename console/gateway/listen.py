"""`subscriptions/listen` for a 2026-07-28 agent: one stream of what the team's servers say changed, for
as long as the agent keeps it open and its token still lets it in (asked again before each change).

The acknowledgment names what the servers agreed to tell (never more than the agent asked and may see);
it is the stream's first message, so changes heard while the servers are still being asked wait for it.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ResourceUpdated,
    ServerEvent,
    event_to_notification,
)

from console.gateway import context, watching
from console.gateway.catalog import Catalog
from console.gateway.context import Context

logger = logging.getLogger(__name__)
BACKLOG = 1024  # changes waiting for an agent that stopped reading; past it the stream ends


async def serve_listen(
    ctx: Context, params: types.SubscriptionsListenRequestParams, catalog: Catalog
) -> dict[str, Any]:
    subscription_id = ctx.request_id
    if subscription_id is None:
        raise MCPError(types.INVALID_REQUEST, "subscriptions/listen needs a request id")
    if len(params.notifications.resource_subscriptions or ()) > watching.MAX_URIS:
        message = f"a stream may hear of {watching.MAX_URIS} resources at most"
        raise MCPError(types.INVALID_PARAMS, message)
    services = context.services(ctx)
    allowed = context.still_allowed(ctx)
    meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
    sources = watching.sources(catalog, catalog.servers, params.notifications)
    send, receive = anyio.create_memory_object_stream[ServerEvent](BACKLOG)

    async def deliver(event: ServerEvent) -> None:
        if not await allowed():  # revoked, or no longer a member: the stream ends
            send.close()
            return
        if not isinstance(event, ResourceUpdated):
            services.memo.catalogs.clear()  # the next listing asks the servers again
        try:
            send.send_nowait(event)
        except anyio.WouldBlock:
            logger.warning("gateway: listen stream %r fell too far behind; ending it", subscription_id)
            send.close()
        except anyio.ClosedResourceError:
            pass

    async with anyio.create_task_group() as hearing:
        honored: list[types.SubscriptionFilter] = []

        async def open_one(source: watching.Source) -> None:
            honored.append(await hearing.start(watching.hear, services.pool, source, deliver))

        async with anyio.create_task_group() as opening:
            for source in sources:
                opening.start_soon(open_one, source)
        acknowledged = types.SubscriptionsAcknowledgedNotification(
            params=types.SubscriptionsAcknowledgedNotificationParams(
                notifications=watching.merged(honored), _meta=meta
            )
        )
        await ctx.session.send_notification(acknowledged, related_request_id=subscription_id)
        with receive:
            async for event in receive:
                notification = event_to_notification(event, meta)
                await ctx.session.send_notification(notification, related_request_id=subscription_id)
        hearing.cancel_scope.cancel()
    return {"resultType": "complete", "_meta": meta}
