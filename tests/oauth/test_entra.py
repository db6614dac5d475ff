"""A server whose authorization server behaves as Microsoft Entra ID's v2.0 endpoints: it refuses the
RFC 8707 `resource` parameter (invalid_target, AADSTS9010010) and scopes not qualified by the
application's ID URI. The server is tests/servers/oauth_server.py as its own process in that mode; its
address is on loopback, so the automatic rule (Entra's hosts) is checked in test_resource_indicator.py and
here the server's setting, set by a team admin on the server's page.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.harness import TEAM, Browser, html, one, promote, signed_in, text
from tests.oauth.notes import NotesServers
from tests.oauth.test_connect import (
    come_back,
    console_with,
    press_connect,
    server_id,
    sign_in_there,
    whoami,
)

pytestmark = pytest.mark.anyio


APP_ID_URI = "api://notes-app"
PAGE = f"/admin/teams/{TEAM}/servers/notes"


async def set_on_page(lead: Browser, url: str, **fields: str) -> httpx.Response:
    """The team admin saves the server's form with the OAuth fields given."""
    form = {"csrf_token": lead.csrf, "transport": "http", "url": url, "oauth": "on", **fields}
    return await lead.client.post(PAGE, data=form)


async def test_a_person_connects_through_an_entra_like_server_once_resource_is_omitted(
    database_url: str, notes_servers: NotesServers
) -> None:
    # Tokens live 30 s: within the console's refresh margin, so each use renews the grant first.
    env = {"OAUTH_ENTRA_APP_ID_URI": APP_ID_URI, "OAUTH_TOKEN_SECONDS": "30"}
    entra = notes_servers(**env)
    async with console_with(database_url, entra) as console, signed_in(console, "dev") as dev:
        server = await server_id(console, dev)

        # The console's default for a server that is not Entra's: `resource` is sent, and refused.
        authorize = await press_connect(dev, server)
        assert parse_qs(urlsplit(authorize).query)["resource"] == [entra.url]
        async with httpx.AsyncClient(timeout=10) as browser_there:
            sent_back = await browser_there.get(authorize)
        assert sent_back.status_code == 302, sent_back.text
        refused = await come_back(dev, sent_back.headers["location"])
        assert refused.status_code == 400, refused.text
        said = text(one(html(refused), "main"))
        assert "The authorization server said no (invalid_target)." in said
        assert "refuses the resource parameter (RFC 8707), as Microsoft Entra ID does" in said
        reasons = [p["reason"] for p in await console.audit_payloads("oauth_refused")]
        assert reasons == ["authorization_denied"]

        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            wrong = await set_on_page(
                lead, entra.url, oauth_resource_indicator="never", oauth_scope_prefix="notes-app"
            )
            assert wrong.status_code == 422, wrong.text
            page = html(wrong)
            assert text(one(page, "#server-oauth-resource .field-error")) == (
                "send, omit, or empty for the console's rule"
            )
            assert "Application ID URI such as api://" in text(
                one(page, "#server-oauth-scope-prefix ~ .field-error")
            )
            saved = await set_on_page(
                lead, entra.url, oauth_resource_indicator="omit", oauth_scope_prefix=APP_ID_URI
            )
            assert saved.status_code == 303, saved.text
            shown = html(await lead.client.get(PAGE))
            assert one(shown, "#server-oauth-resource input[checked]").get("value") == "omit"
            assert one(shown, "#server-oauth-scope-prefix").get("value") == APP_ID_URI

        authorize = await press_connect(dev, server)
        query = parse_qs(urlsplit(authorize).query)
        assert "resource" not in query
        assert query["scope"] == [f"{APP_ID_URI}/notes:read offline_access"]
        back = await come_back(dev, await sign_in_there(authorize, "dana"))
        assert back.status_code == 303, back.text
        for _ in range(2):  # each sent after a refresh, which names no resource either
            call = await whoami(console, "dev")
            assert call["status"] == "completed", call
            assert call["result"]["content"][0]["text"] == "signed in as dana"
        assert [(e["event"], e.get("error")) for e in entra.events()] == [
            ("refused", "invalid_target"),
            ("issued", None),
            ("refreshed", None),
            ("refreshed", None),
        ]
        assert len(await console.audit_payloads("oauth_refreshed")) == 2
