"""In Chromium: a 2025-11-25 server (mcp 1.x, over stdio) pushes a question in the middle of a call; the
approver sees that the server holds the call open and until when, answers, and the call completes with the
answer the server got on the request it held."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.harness import ServerSpec
from tests.mcp.sdk1 import SERVER, install
from tests.site import Site, running_site
from tests.web.browser import RESUME_MS, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser, pytest.mark.timeout(900)]  # may install mcp 1.x


@pytest.fixture
async def site(sqlite_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    old = ServerSpec(command=[str(install()), str(SERVER)])
    async with running_site(sqlite_url, {"old": old}, tmp_path) as running:
        yield running


async def test_an_approver_answers_a_pushed_question_while_the_server_holds_the_call(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    call = await site.call("old", "confirm", {"item": "release 7"})
    assert call["status"] == "awaiting_input", call
    page = await new_page(browser, site.base)
    await sign_in(page, "lead")

    await expect(page.locator(".live-badge")).to_have_text(["live"])  # the inbox says so too
    await page.get_by_role("link", name="Confirm release 7?", exact=True).click()
    held = page.locator("#held")
    await expect(held).to_contain_text("Live: the server holds the call open for this answer")
    await expect(held).to_contain_text("left")
    await expect(held).to_contain_text("the server is told cancel")
    await page.get_by_label("Ok").check()
    await shoot(page, f"{shot_prefix}-1-held")
    await page.get_by_role("button", name="Accept", exact=True).click()

    outcome = page.locator("#outcome")
    await expect(outcome.locator(".result")).to_have_text("release 7: accept", timeout=RESUME_MS)
    await expect(outcome).to_contain_text("by lead")
    await shoot(page, f"{shot_prefix}-2-outcome")
    done = await site.get_call(call["id"])
    assert done["status"] == "completed"
