"""A call waits for its owner to connect their account at an OAuth-protected server, and the owner does
it in Chromium from the question's page: Connect, the authorization server's own sign-in page, back to the
console, and the waiting call completes with the person's own token.

The server is tests/servers/oauth_server.py (Team notes: the `mcp` SDK's server-side auth, which verifies
every bearer token, and its own authorization server) as its own process; the console is `console serve`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.harness import WAIT, ServerSpec
from tests.processes import start_http_server
from tests.site import running_site
from tests.web.browser import ACTION_TIMEOUT_MS, RESUME_MS, Watch, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

OAUTH_SERVER = str(Path(__file__).resolve().parents[1] / "servers" / "oauth_server.py")


async def test_the_owner_connects_in_the_browser_and_the_waiting_call_completes(
    sqlite_url: str, tmp_path: Path, browser: Browser, shot_prefix: str
) -> None:
    with start_http_server([sys.executable, OAUTH_SERVER], {}, tmp_path / "notes.txt") as notes:
        servers = {"notes": ServerSpec(url=notes.url, oauth=True)}
        async with running_site(sqlite_url, servers, tmp_path) as site:
            call = await site.call("notes", "whoami", {})
            [question] = call["pending"]
            assert question["kind"] == "connect", question

            page = await new_page(browser, site.base)
            watch = await Watch.install(page)
            await sign_in(page, "dev", go="/")
            await page.get_by_role("link", name=re.compile("Connect notes")).first.click()
            await expect(page.locator("h1")).to_contain_text("Connect notes: you will sign in at 127.0.0.1")
            await expect(page.locator(".scopes")).to_contain_text("notes:read")
            await watch.assert_inert(page, "the connect question")
            await shoot(page, f"{shot_prefix}-question")

            await page.get_by_role("button", name="Connect notes").click()
            await expect(page.get_by_label("Name")).to_be_visible(
                timeout=ACTION_TIMEOUT_MS
            )  # Team notes' page
            assert page.url.startswith(notes.url.removesuffix("/mcp") + "/login")
            await page.get_by_label("Name").fill("dana")
            await page.get_by_role("button", name="Sign in").click()

            await expect(page).to_have_url(f"{site.base}/elicitations/{question['id']}")
            await expect(page.locator("#outcome")).to_contain_text("signed in as dana", timeout=RESUME_MS)
            await shoot(page, f"{shot_prefix}-completed")
            done = await site.get_call(call["id"], wait=WAIT)
            assert done["status"] == "completed", done
            assert done["result"]["content"][0]["text"] == "signed in as dana"
