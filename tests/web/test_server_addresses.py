"""No server-side request forgery from the admin pages: a server that is not internal may not be on a
loopback, link-local, private or unique-local address, checked when it is saved (a team admin is refused
with 403, as for every setting that names something on the console's host; a site admin is asked to mark
it internal) and on every connection."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from console.mcp.models import McpServer
from console.web.errors import as_sentence
from tests.harness import (
    TEAM,
    Browser,
    html,
    one,
    promote,
    result_text,
    running_console,
    seed,
    signed_in,
    text,
)
from tests.processes import ServerProcess
from tests.web.test_admin_servers import add, press_test_connection

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"


async def save(who: Browser, data: Mapping[str, object], path: str = f"{BASE}/servers") -> tuple[int, str]:
    """POST a server's form; its status and why it was refused (the URL field's error, or the refusal
    page's reason; empty when it was saved)."""
    response = await who.client.post(path, data={"csrf_token": who.csrf, **data})
    errors = html(response).select("#server-url ~ .field-error")
    if response.status_code == 403:
        return 403, text(one(html(response), "main h1 + p"))
    return response.status_code, text(errors[0]) if errors else ""


async def test_a_team_admin_cannot_save_a_server_on_a_loopback_link_local_or_private_address(
    database_url: str, mrtr_http: ServerProcess
) -> None:
    port = urlsplit(mrtr_http.url).port
    refused = {
        "http://169.254.169.254/latest/meta-data/": "169.254.169.254 is a link-local address",
        f"http://127.0.0.1:{port}/mcp": "127.0.0.1 is a loopback address",
        f"http://localhost:{port}/mcp": "localhost resolves to 127.0.0.1, a loopback address",
        f"http://[::1]:{port}/mcp": "::1 is a loopback address",
        "http://10.1.2.3/mcp": "10.1.2.3 is a private address",
        "https://[fd12:3456::1]/mcp": "fd12:3456::1 is a unique-local address",
        "http://[::ffff:169.254.169.254]/": "::ffff:169.254.169.254 is a link-local address",
        "http://100.64.0.1/mcp": "100.64.0.1 is a non-public address",  # carrier-grade NAT
    }
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            for number, (url, reason) in enumerate(refused.items()):
                status, error = await save(lead, {"name": f"s{number}", "transport": "http", "url": url})
                assert (status, error) == (
                    403,
                    as_sentence(f"{reason}: only a server a site admin marks internal may use one"),
                )
            # A public name (not resolvable here: connecting checks it again) is fine, but not moved inside.
            assert (
                await add(lead, {"name": "public", "transport": "http", "url": "https://mcp.example.com/"})
                == 303
            )
            moved = {"transport": "http", "url": f"http://localhost:{port}/mcp"}
            status, error = await save(lead, moved, f"{BASE}/servers/public")
            assert status == 403
            assert "a loopback address" in error
        async with console.runtime.factory() as session:
            servers = {s.name: s.url for s in (await session.execute(select(McpServer))).scalars()}
        assert servers == {"public": "https://mcp.example.com/"}
        attempts = [(p["attempt"], p["server"]) for p in await console.audit_payloads("access_refused")]
        assert attempts == [("add server", f"s{n}") for n in range(len(refused))] + [
            ("change server", "public")
        ]

        # A site admin is told to mark it internal instead.
        await promote(console, "lead2", role="admin", site_admin=True)
        async with signed_in(console, "lead2") as boss:
            status, error = await save(boss, {"name": "local", "transport": "http", "url": moved["url"]})
            assert (status, error) == (
                422,
                "localhost resolves to 127.0.0.1, a loopback address: only a server a site admin marks "
                "internal may use one",
            )


async def test_a_server_whose_address_is_private_when_connecting_is_refused_unless_internal_or_allowed(
    database_url: str, mrtr_http: ServerProcess
) -> None:
    """Saved while private addresses were allowed; with the setting off, the console checks the address
    it connects to (as it would after a name started resolving elsewhere) and refuses."""
    port = urlsplit(mrtr_http.url).port
    local = {"name": "local", "transport": "http", "url": f"http://localhost:{port}/mcp"}
    tokens = await seed(database_url, {})
    async with running_console(database_url, {}, tokens=tokens, allow_private_server_urls=True) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            assert await add(lead, local) == 303
            allowed = await press_test_connection(lead, "local")
            assert allowed.select("#tools tbody tr")

    refusal = "localhost resolves to 127.0.0.1, a loopback address"
    async with running_console(database_url, {}, tokens=tokens, dispatch_attempts=1) as console:
        async with signed_in(console, "lead") as lead:
            page = await press_test_connection(lead, "local")
            assert refusal in text(one(page, "#probe-error"))
            assert not page.select("#tools")
        call = await console.settle((await console.call("local", "complete_now", {"x": "1"}))["id"])
        assert call["status"] == "failed", call
        assert refusal in call["error"]["message"]

        # A site admin marks it internal: the same address is fine now.
        await promote(console, "lead2", role="admin", site_admin=True)
        async with signed_in(console, "lead2") as boss:
            inside = {**local, "internal_shown": "1", "internal": "on", "csrf_token": boss.csrf}
            del inside["name"]
            assert (await boss.client.post(f"{BASE}/servers/local", data=inside)).status_code == 303
            page = await press_test_connection(boss, "local")
            assert page.select("#tools tbody tr")
        done = await console.call("local", "complete_now", {"x": "2"})
        assert result_text(done)
