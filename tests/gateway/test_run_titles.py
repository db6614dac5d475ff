"""A run the gateway opens for an agent is named as a person recognises it: the client's own display name,
the address it came through and when, rather than the SDK's package name and version."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from console.calls.models import Run
from tests.gateway.agents import mcp, payload
from tests.harness import Console, Mrtr, running_console

pytestmark = pytest.mark.anyio

CLIENT = "io.modelcontextprotocol/clientInfo"


async def run_titles(console: Console) -> list[tuple[str, str]]:
    async with console.runtime.factory() as session:
        runs = (await session.execute(select(Run.title, Run.agent).order_by(Run.created_at))).all()
    return [(title, agent) for title, agent in runs]


async def test_a_gateway_run_is_named_after_the_clients_title_the_path_and_the_time(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        client = {"name": "claude-code", "title": "Claude  Code", "version": "2.0.1"}
        call = {"name": "mrtr__complete_now", "arguments": {"x": "named"}}
        called = payload(await mcp(console, "tools/call", call, who="dev", meta={CLIENT: client}))
        assert "result" in called, called
        [(title, _)] = await run_titles(console)
    assert re.fullmatch(r"Claude Code via /mcp, \d{1,2} [A-Z][a-z]{2} \d\d:\d\d UTC", title), title
    assert "2.0.1" not in title


async def test_a_client_with_no_title_is_named_by_its_name(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = {"name": "complete_now", "arguments": {"x": "unnamed"}}
        meta = {CLIENT: {"name": "team-client", "version": "0.1.0"}}
        assert "result" in payload(
            await mcp(console, "tools/call", call, who="dev", path="/mcp/mrtr", meta=meta)
        )
        [(title, _)] = await run_titles(console)
    assert title.startswith("team-client via /mcp/mrtr, "), title
