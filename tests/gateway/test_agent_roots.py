"""What a 2025-11-25 session's client lists as its roots is checked before any of its calls is filed:
too many is refused with an error naming `roots`, and what MCP does not allow is left out."""

from __future__ import annotations

import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root
from sqlalchemy import func, select

from console.calls.models import Call
from console.db import create_engine, session_factory
from console.errors import InvalidInput
from console.mcp.agent_roots import agents_roots
from console.mcp.roots import MAX_ROOTS
from console.mcp.roots import Root as KeptRoot
from tests.harness import WAIT
from tests.site import Site

pytestmark = pytest.mark.anyio


@pytest.mark.slow
async def test_a_session_whose_client_lists_too_many_roots_is_told_so_naming_roots(site: Site) -> None:
    async def listed(context: ClientRequestContext) -> ListRootsResult:
        roots = [Root.model_validate({"uri": f"file:///srv/project/{n}"}) for n in range(MAX_ROOTS + 1)]
        return ListRootsResult(roots=roots)

    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=WAIT * 3))
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, list_roots_callback=listed, mode="legacy") as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("mrtr__pid", {})
    assert refused.value.error.data == {
        "roots": f"at most {MAX_ROOTS} roots, the client listed {MAX_ROOTS + 1}"
    }
    engine = create_engine(site.database_url)
    try:
        async with session_factory(engine)() as session:
            assert (await session.execute(select(func.count()).select_from(Call))).scalar_one() == 0
    finally:
        await engine.dispose()


def test_roots_mcp_does_not_allow_are_left_out_and_repeats_kept_once() -> None:
    listed = {
        "roots": [
            {"uri": "file:///srv/project/a", "name": "A"},
            {"uri": "https://example.com/b"},
            {"uri": "file:///srv/project/c?query=1"},
            {"uri": "file:///srv/project/a"},
            {"uri": 7},
            "file:///srv/project/d",
            {"uri": "file:///srv/project/e", "name": "x" * 500},
        ]
    }
    assert agents_roots(listed) == (KeptRoot("file:///srv/project/a", "A"),)


def test_a_result_without_a_list_of_roots_is_refused_naming_roots() -> None:
    with pytest.raises(InvalidInput) as refused:
        agents_roots({"roots": "file:///srv/project"})
    assert set(refused.value.fields) == {"roots"}
