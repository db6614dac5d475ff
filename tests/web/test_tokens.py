"""API tokens from the web page: shown once, used by an agent, listed with last use, revoked at once."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup, Tag

from console.identity import team_by_name
from tests.harness import TEAM, html, one, running_console, signed_in

pytestmark = pytest.mark.anyio


def row_named(page: BeautifulSoup, name: str) -> Tag:
    [row] = [tr for tr in page.select("#tokens tbody tr") if tr.select("td")[0].get_text(strip=True) == name]
    return row


async def test_a_token_made_on_the_page_is_shown_once_works_and_stops_at_once_when_revoked(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        async with console.runtime.factory() as session:
            team_id = (await team_by_name(session=session, name=TEAM)).id
        async with signed_in(console, "lead") as lead:
            created = await lead.client.post(
                "/tokens", data={"csrf_token": lead.csrf, "name": "release agent", "team": team_id}
            )
            assert created.status_code == 200
            secret = one(html(created), "#new-token").get_text()
            assert secret.startswith("mcpc_")
            connect = json.loads(one(html(created), "#mcp-servers").get_text())
            base = console.runtime.settings.base_url
            assert connect == {
                "mcpServers": {
                    "console": {
                        "type": "http",
                        "url": f"{base}/mcp",
                        "headers": {"Authorization": f"Bearer {secret}"},
                    }
                }
            }
            assert one(html(created), "#mcp-url").get_text() == f"{base}/mcp"
            signing = one(html(created), "#new-webhook-secret").get_text()
            assert signing.startswith("whsec_")  # signs callbacks to this token's calls

            again = await lead.client.get("/tokens")
            assert secret not in again.text  # shown only in the response that created it
            assert signing not in again.text
            row = row_named(html(again), "release agent")
            assert [td.get_text(" ", strip=True) for td in row.select("td")][:2] == ["release agent", TEAM]
            assert "never" in row.get_text()

            agent = {"Authorization": f"Bearer {secret}"}
            assert (await console.client.get("/api/v1/servers", headers=agent)).status_code == 200
            hello = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "pasted", "version": "1"},
                },
            }
            headers = connect["mcpServers"]["console"]["headers"]
            accept = {"Accept": "application/json, text/event-stream"}
            greeted = await console.client.post("/mcp", json=hello, headers=headers | accept)
            assert greeted.status_code == 200, greeted.text  # the pasted entry reaches the gateway
            used = row_named(html(await lead.client.get("/tokens")), "release agent")
            assert "never" not in used.get_text()  # last used is now

            form = one(used, 'form[action$="/revoke"]')
            revoked = await lead.client.post(str(form["action"]), data={"csrf_token": lead.csrf})
            assert revoked.status_code == 303
            assert (await console.client.get("/api/v1/servers", headers=agent)).status_code == 401
            assert "revoked" in row_named(html(await lead.client.get("/tokens")), "release agent").get_text()


async def test_nobody_can_revoke_someone_elses_token_or_make_one_for_another_team(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        async with console.runtime.factory() as session:
            elsewhere = (await team_by_name(session=session, name="elsewhere")).id
        dev_token = console.tokens["dev"]
        async with signed_in(console, "lead") as lead, signed_in(console, "dev") as dev:
            dev_rows = html(await dev.client.get("/tokens")).select("#tokens tbody tr")
            token_id = str(dev_rows[0]["id"]).removeprefix("token-")
            refused = await lead.client.post(f"/tokens/{token_id}/revoke", data={"csrf_token": lead.csrf})
            assert refused.status_code == 404
            headers = {"Authorization": f"Bearer {dev_token}"}
            assert (await console.client.get("/api/v1/servers", headers=headers)).status_code == 200

            foreign = await lead.client.post(
                "/tokens", data={"csrf_token": lead.csrf, "name": "sneaky", "team": elsewhere}
            )
            assert foreign.status_code == 422
            assert "choose one of your teams" in one(html(foreign), "[role=alert]").get_text()
            assert "sneaky" not in (await lead.client.get("/tokens")).text
