"""A server's log notifications reach the agent whose call made them, at the level it asked for, and no
other agent: here two agents of the team call a tool that logs, at once, through `/mcp` (MCP 2026-07-28,
where a request asks for logs in its `_meta`)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest

from tests.gateway.agents import mcp, payload
from tests.harness import Console

pytestmark = pytest.mark.anyio

LOGGING_TOOL = "everything__test_tool_with_logging"
ITS_LOGS = ["Tool execution started", "Tool processing data", "Tool execution completed"]


def logs_heard(response: httpx.Response) -> list[str]:
    assert "Tool with logging executed successfully" in json.dumps(payload(response)), response.text
    if not response.headers["content-type"].startswith("text/event-stream"):
        return []
    messages = [
        json.loads(line.removeprefix("data:"))
        for line in response.text.splitlines()
        if line.startswith("data:") and line.removeprefix("data:").strip()
    ]
    return [m["params"]["data"] for m in messages if m.get("method") == "notifications/message"]


async def call_logging_tool(console: Console, who: str, level: str | None) -> list[str]:
    meta: dict[str, Any] = {"io.modelcontextprotocol/logLevel": level} if level else {}
    params = {"name": LOGGING_TOOL, "arguments": {}}
    return logs_heard(await mcp(console, "tools/call", params, who=who, meta=meta))


async def test_each_agent_hears_its_own_calls_logs_only_and_only_when_it_asked(
    everything_console: Console,
) -> None:
    heard: dict[str, list[str]] = {}

    async def agent(who: str) -> None:
        heard[who] = await call_logging_tool(everything_console, who, "info")

    async with anyio.create_task_group() as agents:  # at once, over the same upstream connection
        for who in ("dev", "lead"):
            agents.start_soon(agent, who)
    assert heard == {"dev": ITS_LOGS, "lead": ITS_LOGS}
    assert await call_logging_tool(everything_console, "dev", None) == []  # it did not ask
    assert await call_logging_tool(everything_console, "dev", "warning") == []  # the tool logs at info
