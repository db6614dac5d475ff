"""A server's sampling and roots requests go to the agent's client when it declared them (the agent has
the model and the roots): in its `input_required` result on 2026-07-28, and the agent's retry resumes the
same console call. Without them declared, the call fails as an API call does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ListRootsResult,
    Root,
    TextContent,
)

from console.db import create_engine, session_factory
from console.mcp.admin_roots import set_roots
from console.mcp.roots import Root as ConfiguredRoot
from console.transactions import transaction
from tests.harness import TEAM, WAIT, ServerSpec
from tests.mcp.sdk1 import SERVER, install
from tests.site import Site, running_site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def text_of(result: CallToolResult) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


@asynccontextmanager
async def agent(site: Site, **callbacks: Any) -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, **callbacks) as client:
        yield client


async def test_a_servers_sampling_request_is_answered_by_the_agents_model(site: Site) -> None:
    asked: list[CreateMessageRequestParams] = []

    async def sample(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        asked.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(type="text", text="Hello."), model="agent-model"
        )

    async with agent(site, sampling_callback=sample) as client:
        result = await client.call_tool("mrtr__ask_sampling", {})
    assert text_of(result) == "ask_sampling answered: CreateMessageResult"
    assert asked[0].messages[0].content.text == "Say hello."  # type: ignore[union-attr]  # a text message


async def test_a_servers_roots_request_is_answered_with_the_agents_roots(site: Site) -> None:
    async def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(
            roots=[Root.model_validate({"uri": "file:///home/dev/project", "name": "project"})]
        )

    async with agent(site, list_roots_callback=roots) as client:
        result = await client.call_tool("mrtr__ask_roots", {})
    assert text_of(result) == "ask_roots answered: ListRootsResult"


@pytest.mark.timeout(900)  # the first test to need it installs mcp 1.x (pip)
async def test_roots_a_2025_11_25_server_pushes_mid_call_are_answered_with_the_agents_roots(
    database_url: str, tmp_path: Path
) -> None:
    old = ServerSpec(command=[str(install()), str(SERVER)])
    project = Root.model_validate({"uri": "file:///home/dev/project", "name": "project"})

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[project])

    async with (
        running_site(database_url, {"old": old}, tmp_path) as site,
        agent(site, list_roots_callback=roots) as client,
    ):
        result = await client.call_tool("old__show_roots", {})
    assert text_of(result) == "roots: file:///home/dev/project (project)"


async def test_roots_an_admin_set_answer_the_server_even_when_the_agent_declared_its_own(site: Site) -> None:
    engine = create_engine(site.database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            await set_roots(
                session=session,
                by=None,
                team_name=TEAM,
                server_name="mrtr",
                roots=[ConfiguredRoot("file:///srv/app")],
            )
    finally:
        await engine.dispose()
    asked: list[ClientRequestContext] = []

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        asked.append(context)
        return ListRootsResult(roots=[])

    async with agent(site, list_roots_callback=roots) as client:
        result = await client.call_tool("mrtr__ask_roots", {})
    assert text_of(result) == "ask_roots answered: ListRootsResult"
    assert asked == []  # the agent's roots were never asked for


async def test_without_sampling_declared_the_call_fails_as_an_api_call_does(site: Site) -> None:
    async with agent(site) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("mrtr__ask_sampling", {})
    assert "'sampling/createMessage' input request for 'llm'" in refused.value.message
    assert "never advertised (it supports elicitation only)" in refused.value.message
