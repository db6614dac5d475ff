"""A call keeps the newest log messages its server sent while the call's requests were out, for the API and
the run page: from a 2026-07-28 server (which logs only for a request that asks) and a 2025-11-25 one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import ServerSpec, html, one, running_console, signed_in, text
from tests.mcp.sdk1 import SERVER, install

pytestmark = pytest.mark.anyio

EVERYTHING_LOGS = ["Tool execution started", "Tool processing data", "Tool execution completed"]


async def test_a_call_keeps_its_servers_log_messages_for_the_api_and_the_run_page(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        call = await console.call("everything", "test_tool_with_logging", {})
        async with signed_in(console, "dev") as dev:
            page = html(await dev.client.get(f"/runs/{call['run_id']}"))
    assert call["status"] == "completed", call
    assert [(line["level"], line["message"]) for line in call["logs"]] == [
        ("info", message) for message in EVERYTHING_LOGS
    ]
    assert call["logs_dropped"] == 0
    shown = one(page, f"#log-{call['id']}")
    assert text(one(shown, "summary")) == "Server log (3)"
    assert text(shown.select("li")[0]).startswith("info everything-test Tool execution started")


async def test_with_the_log_level_off_a_call_keeps_none(database_url: str, everything: ServerSpec) -> None:
    async with running_console(database_url, {"everything": everything}, call_log_level="off") as console:
        call = await console.call("everything", "test_tool_with_logging", {})
    assert call["status"] == "completed", call
    assert call["logs"] == []


@pytest.mark.timeout(900)  # the first test to need it installs mcp 1.x (pip)
async def test_an_older_servers_flood_keeps_the_newest_fifty_and_shows_its_markup_as_text(
    database_url: str, tmp_path: Path
) -> None:
    old = ServerSpec(command=[str(install()), str(SERVER)])
    async with running_console(database_url, {"old": old}) as console:
        call = await console.call("old", "chatty", {"count": 60})
        async with signed_in(console, "dev") as dev:
            page = html(await dev.client.get(f"/runs/{call['run_id']}"))
    assert call["status"] == "completed", call
    messages = [line["message"] for line in call["logs"]]
    assert messages == [f"line {k} of 60 <b>unsafe</b>" for k in range(11, 61)]  # the debug one is below info
    assert {line["logger"] for line in call["logs"]} == {"chatty"}
    assert call["logs_dropped"] == 10
    shown = one(page, f"#log-{call['id']}")
    assert text(one(shown, "summary")) == "Server log (50, 10 older not kept)"
    assert shown.select("b") == []
    assert "line 60 of 60 <b>unsafe</b>" in text(shown)
