"""An agent hears through the gateway when a resource it subscribed to changes: a 2026-07-28 agent on its
own `subscriptions/listen` stream, a 2025-11-25 session as `notifications/resources/updated` pushed to
it. Here the change is a tool call through the gateway (the everything test server's
update_watched_resource), which the server tells its listeners of; the console listens to the server
for the agent. Nobody hears of a resource no server of theirs lists."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ResourceUpdated

from console.audit import SYSTEM
from console.db import create_engine, session_factory
from console.identity.teams import remove_member
from console.identity.tokens import list_tokens, revoke_token
from console.transactions import transaction
from tests.harness import TEAM, WAIT, ServerSpec
from tests.site import Site, running_site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WATCHED = "test://watched-resource"
UPDATE = "everything__update_watched_resource"


@pytest.fixture
async def site(database_url: str, everything: str, tmp_path: Path) -> AsyncIterator[Site]:
    async with running_site(database_url, {"everything": ServerSpec(url=everything)}, tmp_path) as running:
        yield running


@asynccontextmanager
async def agent(site: Site, who: str = "dev", **options: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=site.auth(who), timeout=httpx2.Timeout(30, read=WAIT * 3))
    async with (
        http,
        Client(streamable_http_client(site.base + "/mcp", http_client=http), **options) as client,
    ):
        yield client


def version_in(result: types.CallToolResult) -> str:
    text = "".join(part.text for part in result.content if part.type == "text")
    assert text.startswith("The watched resource is now version "), text
    return text.removeprefix("The watched resource is now version ").rstrip(".")


async def read_watched(client: Client) -> str:
    contents = (await client.read_resource(WATCHED)).contents
    assert isinstance(contents[0], types.TextResourceContents)
    return contents[0].text


async def test_a_listening_agent_hears_that_its_resource_changed_and_reads_the_new_version(
    site: Site,
) -> None:
    async with agent(site) as client:
        async with client.listen(resource_subscriptions=[WATCHED, "test://listed-nowhere"]) as changes:
            assert changes.honored.resource_subscriptions == [WATCHED]  # what a server here lists
            version = version_in(await client.call_tool(UPDATE, {}))
            with anyio.fail_after(WAIT):
                event = await anext(changes)
        assert event == ResourceUpdated(WATCHED)
        assert await read_watched(client) == f"Watched resource content (version {version})"


async def test_a_2025_session_that_subscribed_is_told_each_change_pushed(site: Site) -> None:
    updated: list[str] = []
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            told.set()

    async with agent(site, mode="legacy", message_handler=on_message) as client:
        assert client.session.protocol_version == "2025-11-25"
        await client.session.send_request(
            types.SubscribeRequest(params=types.SubscribeRequestParams(uri=WATCHED)), types.EmptyResult
        )
        version = version_in(await client.call_tool(UPDATE, {}))
        with anyio.fail_after(WAIT):
            await told.wait()
        assert updated == [WATCHED]
        assert await read_watched(client) == f"Watched resource content (version {version})"
        await client.session.send_request(
            types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=WATCHED)), types.EmptyResult
        )


async def test_another_teams_agent_cannot_subscribe_to_a_resource_of_this_team(site: Site) -> None:
    async with agent(site, "outsider", mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.session.send_request(
                types.SubscribeRequest(params=types.SubscribeRequestParams(uri=WATCHED)), types.EmptyResult
            )
        assert refused.value.code == types.INVALID_PARAMS
    async with (
        agent(site, "outsider") as client,
        client.listen(resource_subscriptions=[WATCHED]) as changes,
    ):
        assert changes.honored.resource_subscriptions is None  # no server of theirs lists it


async def shut_out(site: Site, how: str) -> None:
    """Revoke dev's token, or remove dev from the team, in the running console's database."""
    engine = create_engine(site.database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            if how == "revoked":
                (token,) = await list_tokens(session=session, user_name="dev")
                await revoke_token(session=session, actor=SYSTEM, token_id=token.id)
            else:
                await remove_member(session=session, by=None, team_name=TEAM, user_name="dev")
    finally:
        await engine.dispose()


@pytest.mark.parametrize("how", ["revoked", "removed"])
async def test_a_stream_whose_token_was_revoked_or_whose_member_left_hears_no_more_changes(
    site: Site, how: str
) -> None:
    async with agent(site) as client, client.listen(resource_subscriptions=[WATCHED]) as changes:
        await shut_out(site, how)
        async with agent(site, "lead") as lead:
            version_in(await lead.call_tool(UPDATE, {}))  # a change dev may no longer hear of
        with anyio.fail_after(WAIT), pytest.raises(StopAsyncIteration):  # the console ends the stream
            await anext(changes)
