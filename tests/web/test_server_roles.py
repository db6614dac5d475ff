"""Who may register what: stdio servers run a program on the console's host, so only site admins (and the
command line) add or change them; a team admin adds HTTP servers and enables or disables any of the team's."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping

import httpx
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.mcp.models import McpServer
from tests.harness import TEAM, Browser, Console, Mrtr, html, one, promote, running_console, signed_in, text
from tests.web.test_admin_servers import press_test_connection, stored

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"
PLANTED = "sh -c 'id > planted.txt'"  # a command a team admin must never get to run


async def refusals(console: Console) -> list[dict[str, object]]:
    async with console.runtime.factory() as session:
        query = select(AuditEvent).where(AuditEvent.action == "access_refused").order_by(AuditEvent.seq)
        rows = (await session.execute(query)).scalars()
        return [{"actor": e.actor_id, "team": e.team_id, **json.loads(e.payload_json)} for e in rows]


async def post(who: Browser, path: str, data: Mapping[str, object]) -> httpx.Response:
    return await who.client.post(path, data={"csrf_token": who.csrf, **data})


def refusal_text(response: httpx.Response) -> str:
    return text(one(html(response), "main h1 + p"))


async def test_a_team_admin_cannot_add_a_stdio_server_and_the_refusal_is_audited(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            stdio = {"name": "planted", "transport": "stdio", "command": PLANTED}
            refused = await post(lead, f"{BASE}/servers", stdio)
            assert refused.status_code == 403
            assert "Only a site admin can add or change a stdio server" in refusal_text(refused)
            form = html(await lead.client.get(f"{BASE}/servers/new"))
            assert one(form, 'input[name="transport"][value="stdio"]').has_attr("disabled")
            assert one(form, 'input[name="transport"][value="http"]').has_attr("checked")
            assert not form.select('input[name="internal"]')
            # Marking a server internal (allowed on private addresses) is a site admin's call too.
            internal = {
                "name": "inside",
                "transport": "http",
                "url": "https://mcp.example.com/mcp",
                "internal_shown": "1",
                "internal": "on",
            }
            refused_internal = await post(lead, f"{BASE}/servers", internal)
            assert refused_internal.status_code == 403
            assert "Only a site admin can mark a server internal" in refusal_text(refused_internal)
            # An HTTP server is the team admin's to add.
            plain = {"name": "remote", "transport": "http", "url": "https://mcp.example.com/mcp"}
            assert (await post(lead, f"{BASE}/servers", plain)).status_code == 303

        async with console.runtime.factory() as session:
            names = set((await session.execute(select(McpServer.name))).scalars())
        assert names == {"remote"}
        seen = await refusals(console)
        assert [(e["attempt"], e["server"]) for e in seen] == [
            ("add server", "planted"),
            ("add server", "inside"),
        ]
        assert all(e["team"] is not None for e in seen)
        assert "stdio" in str(seen[0]["reason"])


async def test_a_team_admin_cannot_change_a_site_admins_stdio_server_but_can_disable_enable_and_test_it(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    assert mrtr_stdio.spec.command is not None
    command = shlex.join(mrtr_stdio.spec.command)
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        await promote(console, "lead", role="admin")
        await promote(console, "lead2", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            for change in (
                {"transport": "stdio", "command": PLANTED},
                {"transport": "stdio", "command": command, "env_name": ["PYTHONSTARTUP"], "env_value": ["x"]},
                {"transport": "http", "url": "https://mcp.example.com/mcp"},
            ):
                refused = await post(lead, f"{BASE}/servers/mrtr", change)
                assert refused.status_code == 403
                assert "Only a site admin can add or change a stdio server" in refusal_text(refused)
            server = await stored(console, "mrtr")
            assert (server.transport, json.loads(server.command_json or "[]")) == (
                "stdio",
                mrtr_stdio.spec.command,
            )
            assert [e["attempt"] for e in await refusals(console)] == ["change server"] * 3
            page = html(await lead.client.get(f"{BASE}/servers/mrtr"))
            assert "Only a site admin can change a stdio server" in text(one(page, "#stdio-locked"))
            assert one(page, "#server-form fieldset.plain").has_attr("disabled")
            assert not page.select('#server-form button[type="submit"]')

            # Enabling and disabling stay the team admin's, and so does testing the connection.
            assert (await post(lead, f"{BASE}/servers/mrtr/disable", {})).status_code == 303
            assert (await stored(console, "mrtr")).disabled
            assert (await post(lead, f"{BASE}/servers/mrtr/enable", {})).status_code == 303
            assert not (await stored(console, "mrtr")).disabled
            tested = await press_test_connection(lead, "mrtr")
            assert tested.select("#tools tbody tr")

        # A site admin may change it; a new command keeps none of the values entered for the old one.
        async with signed_in(console, "lead2") as boss:
            moved = [sys.executable, "-I", *mrtr_stdio.spec.command[1:]]
            change = {"transport": "stdio", "command": shlex.join(moved), "env_name": ["MRTR_LOG"]}
            edited = await post(boss, f"{BASE}/servers/mrtr", change)
            assert edited.status_code == 303
            assert edited.headers["location"] == f"{BASE}/servers/mrtr?dropped=MRTR_LOG"
        server = await stored(console, "mrtr")
        assert (json.loads(server.command_json or "[]"), json.loads(server.env_json)) == (moved, {})


async def test_a_team_admin_cannot_repoint_an_internal_server(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        await promote(console, "lead2", role="admin", site_admin=True)
        inside = {
            "name": "intranet",
            "transport": "http",
            "url": "http://10.0.0.5:8080/mcp",
            "internal_shown": "1",
            "internal": "on",
        }
        async with signed_in(console, "lead2") as boss:
            assert (await post(boss, f"{BASE}/servers", inside)).status_code == 303
        async with signed_in(console, "lead") as lead:
            same_place = {"transport": "http", "url": "http://10.0.0.5:8080/mcp", "trusted": "on"}
            assert (await post(lead, f"{BASE}/servers/intranet", same_place)).status_code == 303
            elsewhere = {"transport": "http", "url": "http://10.0.0.6:8080/mcp"}
            refused = await post(lead, f"{BASE}/servers/intranet", elsewhere)
            assert refused.status_code == 403
            assert "Only a site admin can change where an internal server points" in refusal_text(refused)
            page = html(await lead.client.get(f"{BASE}/servers/intranet"))
            assert "Only a site admin can change where it points" in text(one(page, "#internal-note"))
        server = await stored(console, "intranet")
        assert (server.url, server.internal, server.trusted) == ("http://10.0.0.5:8080/mcp", True, True)
