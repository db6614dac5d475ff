"""The npm everything-server (MCP 2025-11-25, TypeScript SDK 1.x) through the console: its elicitation tool
pushes a form in the middle of the call, and an approver's answer completes it."""

from __future__ import annotations

import pytest

from tests.harness import result_text, running_console
from tests.mcp.npm_everything import stdio_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(600)]  # may run npm ci first


async def test_the_npm_everything_servers_elicitation_completes_with_an_approvers_answer(
    sqlite_url: str,
) -> None:
    async with running_console(sqlite_url, {"everything": stdio_server()}) as console:
        call = await console.call("everything", "trigger-elicitation-request", {})
        assert call["status"] == "awaiting_input", call
        question = await console.question(call["pending"][0]["id"])
        assert question["live"] is True
        assert question["message"] == "Please provide inputs for the following fields:"
        assert question["requested_schema"]["required"] == ["name"]
        answer = {"name": "Ada Lovelace", "check": True, "integer": 7}
        done = await console.answer_and_settle(call, "accept", answer)
    text = result_text(done)
    assert "User provided the requested information!" in text, text
    assert "- Name: Ada Lovelace" in text
    assert "- Agreed to terms: true" in text
    assert "- Favorite Integer: 7" in text
