"""fastmcp 4.x as a real server behind the console. Its `ctx.elicit` pushes a question only on MCP
2025-11-25 (on a 2026-07-28 connection it fails the call saying so): `console servers test` recommends
pinning such a server, a team admin pins it from the command line, the server's page or the API, and once
pinned its question is asked of people and the call completes with the answer. `console call --elicit
wait` leaves a link to it, retrying until it stops asking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import TEAM, ServerSpec, html, one, promote, result_text, running_console, signed_in, text
from tests.interop.foreign import python_env
from tests.processes import ServerProcess, start_http_server
from tests.test_cli import console

pytestmark = [pytest.mark.anyio]

SERVER = Path(__file__).resolve().parent / "servers" / "fastmcp4_asker.py"
CANNOT_PUSH = "elicitation via server-initiated requests is unavailable on 2026-07-28 connections."
PIN = f"console servers edit {TEAM} asker --protocol-version 2025-11-25"
REFUSED_PIN = "one of 2025-11-25, 2026-07-28, or empty for the newest both speak"


@pytest.fixture(scope="module")
def fastmcp4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    python = python_env("fastmcp-4") / "python"
    stderr = tmp_path_factory.mktemp("fastmcp4") / "stderr.txt"
    with start_http_server([str(python), str(SERVER)], {}, stderr) as server:
        yield server


def cli(database_url: str, cwd: Path, *args: str) -> list[str]:
    done = console(*args, url=database_url, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


async def test_servers_test_recommends_the_pin_and_the_pinned_server_asks_people(
    database_url: str, fastmcp4: ServerProcess, tmp_path: Path
) -> None:
    async with running_console(database_url, {"asker": ServerSpec(url=fastmcp4.url)}) as running:
        refused = await running.call("asker", "release", {"item": "v2"})
        tested = cli(database_url, tmp_path, "servers", "test", TEAM, "asker")
        [advice] = [line for line in tested if "--protocol-version" in line]
        cli(database_url, tmp_path, *advice.rsplit(": ", 1)[1].split()[1:])  # the command the note gives
        asked = await running.call("asker", "release", {"item": "v2"})
        done = await running.answer_and_settle(asked, "accept", {"value": True})
        [changed] = await running.audit_payloads("server_changed")
    assert (refused["status"], refused["result"]["isError"]) == ("completed", True)
    assert result_text(refused) == CANNOT_PUSH  # what the agent saw before the pin
    assert advice == (
        "note: a recent call failed because the server cannot push a question on MCP 2026-07-28: pin it to "
        f"2025-11-25, where the questions it pushes are held for people to answer: {PIN}"
    )
    assert (asked["status"], asked["pending"][0]["message"]) == ("awaiting_input", "Release v2?")
    assert result_text(done) == "v2: accept True"
    assert (changed["changed"], changed["protocol_version"]) == (["protocol_version"], "2025-11-25")


async def test_a_team_admin_pins_it_on_its_page_and_the_test_button_speaks_2025_11_25(
    database_url: str, fastmcp4: ServerProcess
) -> None:
    async with running_console(database_url, {"asker": ServerSpec(url=fastmcp4.url)}) as running:
        await promote(running, "lead", role="admin")
        path = f"/admin/teams/{TEAM}/servers/asker"
        async with signed_in(running, "dev") as member:
            form = {"csrf_token": member.csrf, "transport": "http", "url": fastmcp4.url}
            not_admin = await member.client.post(path, data={**form, "protocol_version": "2025-11-25"})
        async with signed_in(running, "lead") as lead:
            form["csrf_token"] = lead.csrf
            bad = await lead.client.post(path, data={**form, "protocol_version": "2024-11-05"})
            saved = await lead.client.post(path, data={**form, "protocol_version": "2025-11-25"})
            page = html(await lead.client.get(path))
            tested = html(await lead.client.post(f"{path}/test", data={"csrf_token": lead.csrf}))
    assert not_admin.status_code == 403, not_admin.text
    assert bad.status_code == 422, bad.text
    assert text(one(html(bad), "#server-protocol .field-error")) == REFUSED_PIN
    assert saved.status_code == 303, saved.text
    assert one(page, "#server-protocol input[checked]")["value"] == "2025-11-25"
    notes = [text(p) for p in tested.select("#probe-outcome p.muted")]
    assert notes == [
        "the server speaks MCP 2025-11-25: a question it pushes in the middle of a call is held open until "
        "a person answers it, on a connection that carries that one call"
    ]


async def test_a_team_admin_pins_it_through_the_api_and_a_member_may_not(
    database_url: str, fastmcp4: ServerProcess
) -> None:
    async with running_console(database_url, {"asker": ServerSpec(url=fastmcp4.url)}) as running:
        await promote(running, "lead", role="admin")

        async def patch(who: str, body: dict[str, Any]) -> Any:
            return await running.client.patch("/api/v1/servers/asker", json=body, headers=running.auth(who))

        member = await patch("dev", {"protocol_version": "2025-11-25"})
        bad = await patch("lead", {"protocol_version": "2024-11-05"})
        pinned = await patch("lead", {"protocol_version": "2025-11-25"})
        listed = await running.client.get("/api/v1/servers", headers=running.auth("dev"))
        unpinned = await patch("lead", {"protocol_version": None})
    assert member.status_code == 403, member.text
    assert bad.status_code == 422, bad.text
    assert list(bad.json()["error"]["fields"]) == ["protocol_version"]
    assert (pinned.status_code, pinned.json()["pinned_protocol"]) == (200, "2025-11-25"), pinned.text
    assert listed.json()[0]["pinned_protocol"] == "2025-11-25"
    assert (unpinned.status_code, unpinned.json()["pinned_protocol"]) == (200, None), unpinned.text


def test_console_call_waits_for_a_link_the_server_finishes_itself_retrying_on_2026_07_28(
    fastmcp4: ServerProcess, tmp_path: Path
) -> None:
    database = f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    args = ["call", "connect", "--url", fastmcp4.url, "--args", '{"site": "crm", "asks": 3}']
    done = console(*args, "--elicit", "wait", url=database, cwd=tmp_path)
    lines: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    *rounds, end = lines
    assert done.returncode == 0, done.stderr
    # The server asked again on each retry until its flow was done; the one --elicit wait served all three.
    assert [r["answers"] for r in rounds] == [{"connect": {"action": "wait", "content": None}}] * 3
    assert (end["status"], end["result"]["content"][0]["text"]) == (
        "completed",
        "crm: connected after 3 asks",
    )
