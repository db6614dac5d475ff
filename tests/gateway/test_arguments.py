"""A tool call through the gateway whose arguments the tool's inputSchema refuses is answered with
JSON-RPC -32602 naming the field, and nothing is recorded or sent."""

from __future__ import annotations

import secrets

import pytest
from mcp.types import INVALID_PARAMS

from tests.gateway.agents import mcp, payload
from tests.harness import Mrtr, running_console
from tests.processes import requests_with

pytestmark = pytest.mark.anyio


async def test_arguments_the_schema_refuses_are_a_32602_error_and_never_reach_the_server(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        refused = await mcp(
            console,
            "tools/call",
            {"name": "mrtr__complete_now", "arguments": {"x": 5, "t": topic}},
            who="dev",
        )
        assert refused.status_code == 400, refused.text  # the SDK's status for a JSON-RPC error
        error = payload(refused)["error"]
        assert error["code"] == INVALID_PARAMS
        assert "inputSchema of tool 'complete_now'" in error["message"]
        assert error["data"] == {"params.arguments.x": "5 is not of type 'string'"}
        assert await console.audit_payloads("call_started") == []
        fine = await mcp(
            console, "tools/call", {"name": "mrtr__complete_now", "arguments": {"x": topic}}, who="dev"
        )
        assert payload(fine)["result"]["content"][0]["text"] == f"hello {topic}"
    assert requests_with(mrtr_memory.log, "t", topic) == []
