"""Admin pages for MCP servers: add and edit over stdio and HTTP, test the connection, disable, and
never show a secret back."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import anyio
import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound
from tests.harness import (
    TEAM,
    Browser,
    Console,
    Mrtr,
    html,
    one,
    promote,
    result_text,
    running_console,
    signed_in,
)
from tests.processes import ServerProcess
from tests.web.test_csrf_and_routes import audit_count, header_problems
from tests.web.test_hostile_text import BENIGN, PAYLOADS, shape

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"
WAIT_SECONDS = 5  # far below the probe's and the request's limits
SECRET = "sk-live-do-not-show-7f3a"  # noqa: S105  # a stand-in secret the pages must never show


def tools(page: BeautifulSoup) -> dict[str, list[str]]:
    """Tool name -> [title, read-only, destructive, idempotent, open world] as the tools table shows them."""
    rows: dict[str, list[str]] = {}
    for row in page.select("#tools tbody tr"):
        cells = row.select("td")
        rows[one(cells[0], "code").get_text()] = [c.get_text(strip=True) for c in cells[1:]]
    return rows


async def stored(console: Console, name: str) -> McpServer:
    async with console.runtime.factory() as session:
        server: McpServer = (
            await session.execute(select(McpServer).where(McpServer.name == name))
        ).scalar_one()
    return server


def opened_headers(console: Console, server: McpServer) -> dict[str, str]:
    """The server's header values, opened with the console's key as a connection would."""
    return dict(endpoint_for(server, Outbound.of(console.runtime.settings)).headers)


async def audit_text(console: Console) -> str:
    async with console.runtime.factory() as session:
        return "\n".join(e.payload_json for e in (await session.execute(select(AuditEvent))).scalars())


async def add(who: Browser, data: Mapping[str, object]) -> int:
    response = await who.client.post(f"{BASE}/servers", data={"csrf_token": who.csrf, **data})
    return response.status_code


async def press_test_connection(who: Browser, name: str, *, htmx: bool = False) -> BeautifulSoup:
    headers = {"HX-Request": "true", "X-CSRF-Token": who.csrf} if htmx else {}
    response = await who.client.post(
        f"{BASE}/servers/{name}/test", data={} if htmx else {"csrf_token": who.csrf}, headers=headers
    )
    assert response.status_code == 200, response.text
    assert header_problems(response) == []
    return html(response)


async def test_servers_added_on_the_pages_connect_over_stdio_and_http_and_list_annotated_tools(
    database_url: str, mrtr_stdio: Mrtr, mrtr_http: ServerProcess
) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            form_page = await lead.client.get(f"{BASE}/servers/new")
            assert form_page.status_code == 200
            assert header_problems(form_page) == []
            assert mrtr_stdio.spec.command is not None
            stdio = {
                "name": "local",
                "transport": "stdio",
                "command": shlex.join(mrtr_stdio.spec.command),
                "env_name": ["MRTR_LOG", "API_SECRET", ""],
                "env_value": [str(mrtr_stdio.log), SECRET, ""],
            }
            http = {
                "name": "remote",
                "transport": "http",
                "url": str(mrtr_http.url),
                "header_name": ["X-Api-Key", ""],
                "header_value": [SECRET, ""],
                "internal_shown": "1",
                "internal": "on",  # the test server listens on loopback
            }
            assert await add(lead, stdio) == 303
            assert await add(lead, http) == 303
            taken = await lead.client.post(f"{BASE}/servers", data={"csrf_token": lead.csrf, **http})
            assert taken.status_code == 409
            assert "already exists" in one(html(taken), "#server-name ~ .field-error").get_text()
            assert SECRET not in taken.text
            team_page = html(await lead.client.get(BASE))
            transports = {
                row.select("td")[0].get_text(strip=True): row.select("td")[2].get_text(strip=True)
                for row in team_page.select("#servers tbody tr")
            }
            assert transports == {"local": "stdio", "remote": "http"}

            for name in ("local", "remote"):
                page = await press_test_connection(lead, name)
                assert "Connection failed" not in page.get_text()
                listed = tools(page)
                assert listed["pid"] == ["Process id", "yes", "—", "—", "no"]
                assert listed["complete_now"] == ["—", "—", "yes", "no", "—"]
                assert listed["two_rounds"] == ["—", "—", "—", "—", "—"]
                assert "policies ignore its annotations" in one(page, "#untrusted-note").get_text()
                fragment = await press_test_connection(lead, name, htmx=True)
                assert [tag.name for tag in fragment.find_all(recursive=False)] == ["div"]
                assert one(fragment, "#probe-outcome").select("#tools tbody tr")

            # The server added on the page serves the team's agents.
            done = await console.call("local", "complete_now", {"x": "hi"})
            assert done["status"] == "completed", done
            assert result_text(done)
        assert (await stored(console, "local")).trusted is False


async def test_secret_values_are_never_shown_and_a_blank_value_keeps_the_stored_one(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            http = {
                "name": "remote",
                "transport": "http",
                "url": "https://mcp.example.com/mcp",
                "header_name": ["X-Api-Key", "X-Other"],
                "header_value": [SECRET, "other-secret-value"],
            }
            assert await add(lead, http) == 303
            page = await lead.client.get(f"{BASE}/servers/remote")
            assert SECRET not in page.text
            names = [str(i["value"]) for i in html(page).select('input[name="header_name"][value]')]
            assert names == ["X-Api-Key", "X-Other"]
            assert all(not i.get("value") for i in html(page).select('input[name="header_value"]'))

            # Blank keeps X-Api-Key (the URL stays), the checkbox drops X-Other, trusted turns on.
            edit = {
                "csrf_token": lead.csrf,
                "transport": "http",
                "url": "https://mcp.example.com/mcp",
                "header_name": ["X-Api-Key", "X-Other"],
                "header_value": ["", ""],
                "header_remove": ["X-Other"],
                "trusted": "on",
            }
            assert (await lead.client.post(f"{BASE}/servers/remote", data=edit)).status_code == 303
            server = await stored(console, "remote")
            assert opened_headers(console, server) == {"X-Api-Key": SECRET}
            assert (server.url, server.trusted) == ("https://mcp.example.com/mcp", True)

            # An invalid edit comes back with field errors, but never with what was typed as a value.
            bad = {**edit, "url": "ftp://nope", "header_value": ["typed-secret-9c1", ""]}
            refused = await lead.client.post(f"{BASE}/servers/remote", data=bad)
            assert refused.status_code == 422
            assert "typed-secret-9c1" not in refused.text
            assert SECRET not in refused.text
            assert "http(s)" in one(html(refused), "#server-url ~ .field-error").get_text()
            unchanged = await stored(console, "remote")
            assert opened_headers(console, unchanged) == {"X-Api-Key": SECRET}
            assert unchanged.url == "https://mcp.example.com/mcp"
            new_header = {**edit, "header_name": ["X-Api-Key", "X-New"], "header_value": ["", ""]}
            missing = await lead.client.post(f"{BASE}/servers/remote", data=new_header)
            assert missing.status_code == 422
            assert "give a value for X-New" in missing.text

            for url in (BASE, f"{BASE}/servers/remote", "/admin"):
                assert SECRET not in (await lead.client.get(url)).text
        log = await audit_text(console)
        assert SECRET not in log
        assert "other-secret-value" not in log
        assert await audit_count(console, "server_added") >= 1
        assert await audit_count(console, "server_changed") >= 1


async def test_a_server_name_that_could_make_gateway_names_ambiguous_is_refused_next_to_the_name(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            form = {"name": "hostile__b", "transport": "stdio", "command": "python -m some_server"}
            refused = await lead.client.post(f"{BASE}/servers", data={"csrf_token": lead.csrf, **form})
            assert refused.status_code == 422
            error = one(html(refused), "#server-name ~ .field-error").get_text()
            assert "no '__'" in error
            assert "/mcp" in error
            assert one(html(refused), "#server-name").get("value") == "hostile__b"  # kept, to correct it
            async with console.runtime.factory() as session:
                assert (await session.execute(select(McpServer))).scalars().all() == []


async def test_a_server_that_cannot_start_reports_a_clear_error(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            broken = {"name": "broken", "transport": "stdio", "command": "/nonexistent/mcp-server --flag"}
            assert await add(lead, broken) == 303
            page = await press_test_connection(lead, "broken")
            error = one(page, "#probe-error").get_text()
            assert "cannot connect to /nonexistent/mcp-server" in error
            assert "No such file or directory" in error
            assert not page.select("#tools")
            fragment = await press_test_connection(lead, "broken", htmx=True)
            assert "No such file or directory" in one(fragment, "#probe-error").get_text()


async def test_a_disabled_server_refuses_new_calls_until_enabled_again(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            disabled = await lead.client.post(f"{BASE}/servers/mrtr/disable", data={"csrf_token": lead.csrf})
            assert disabled.status_code == 303
            page = html(await lead.client.get(f"{BASE}/servers/mrtr"))
            assert "disabled" in one(page, "#server-state").get_text()
            refused = await console.start(
                "mrtr", "tools/call", {"name": "complete_now", "arguments": {"x": "1"}}
            )
            assert refused.status_code == 409
            assert (
                refused.json()["error"]["message"]
                == "server 'mrtr' is disabled; a team admin can enable it again"
            )
            listed = await console.client.get("/api/v1/servers", headers=console.auth("dev"))
            assert [s["name"] for s in listed.json()] == []

            enabled = await lead.client.post(f"{BASE}/servers/mrtr/enable", data={"csrf_token": lead.csrf})
            assert enabled.status_code == 303
            done = await console.call("mrtr", "complete_now", {"x": "again"})
            assert done["status"] == "completed"
        assert (
            await audit_count(console, "server_disabled"),
            await audit_count(console, "server_enabled"),
        ) == (1, 1)


async def test_tool_text_from_a_server_stays_inert_on_the_test_connection_page(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    assert mrtr_stdio.spec.command is not None
    command = shlex.join(mrtr_stdio.spec.command)
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            pages: dict[str, BeautifulSoup] = {}
            for name, text in (("plain", BENIGN), ("odd", " ".join(PAYLOADS))):
                server = {
                    "name": name,
                    "transport": "stdio",
                    "command": command,
                    "env_name": ["MRTR_TOOL_TEXT"],
                    "env_value": [text],
                }
                assert await add(lead, server) == 303
                pages[name] = await press_test_connection(lead, name)
                assert tools(pages[name])["odd_text"][:3] == [text, "—", "yes"]
            assert shape(pages["odd"]) == shape(pages["plain"])
            assert " ".join(PAYLOADS) in one(pages["odd"], "#tools").get_text()


async def test_a_server_that_never_answers_holds_up_nobody_while_it_is_tested_or_listed(
    database_url: str, tmp_path: Path
) -> None:
    up = tmp_path / "up"
    os.mkfifo(up)
    says_up = f"import sys; open({str(up)!r}, 'w').write('up'); sys.stdin.read()"  # until the console goes
    mute = shlex.join([sys.executable, "-c", says_up])  # starts, then never speaks MCP
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead, anyio.create_task_group() as tg:
            assert await add(lead, {"name": "mute", "transport": "stdio", "command": mute}) == 303
            reader = os.open(up, os.O_RDONLY | os.O_NONBLOCK)
            try:
                tg.start_soon(press_test_connection, lead, "mute")  # waits for the probe's whole limit
                with anyio.fail_after(WAIT_SECONDS):
                    await anyio.wait_readable(reader)  # the test's server process has started
            finally:
                os.close(reader)
            tg.start_soon(
                partial(console.client.get, "/api/v1/servers/mute/tools", headers=console.auth("dev"))
            )
            with anyio.fail_after(WAIT_SECONDS):
                listed = await console.client.get("/api/v1/servers", headers=console.auth("dev"))
                inbox = await lead.client.get("/inbox")
            assert listed.status_code == 200
            assert [s["name"] for s in listed.json()] == ["mute"]
            assert inbox.status_code == 200
            tg.cancel_scope.cancel()
