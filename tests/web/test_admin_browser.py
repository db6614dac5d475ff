"""The admin pages in Chromium: htmx swaps the connection test and the members in place, under the CSP."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from console.db import create_engine, session_factory
from console.identity.teams import change_role
from console.transactions import transaction
from tests.harness import TEAM, stdio_mrtr
from tests.site import running_site
from tests.web.browser import ACTION_TIMEOUT_MS, Watch, new_page, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]


def role_of(page: Page, name: str) -> Locator:
    return page.get_by_label(f"Role of {name}", exact=True)


async def set_role(page: Page, name: str, role: str) -> None:
    """Choose the role and press Change role; returns once htmx has swapped the answer in."""
    await role_of(page, name).select_option(role)
    button = page.locator("form", has=role_of(page, name)).get_by_role("button", name="Change role")
    async with page.expect_response(lambda r: r.url.endswith(f"/members/{name}")):
        await button.click()
    await expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling")).to_have_count(0)


async def test_an_admin_tests_a_connection_and_changes_a_role_without_leaving_the_page(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    async with running_site(sqlite_url, {"mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}, tmp_path) as site:
        engine = create_engine(sqlite_url)
        try:
            async with transaction(session_factory(engine)) as session:
                await change_role(session=session, by=None, team_name=TEAM, user_name="lead", role="admin")
        finally:
            await engine.dispose()
        page = await new_page(browser, site.base)
        watch = await Watch.install(page)
        server_page = f"/admin/teams/{TEAM}/servers/mrtr"
        await sign_in(page, "lead", go=server_page)
        await page.get_by_role("button", name="Test connection").click()
        tools = page.locator("#tools")
        await expect(tools).to_contain_text("Process id", timeout=ACTION_TIMEOUT_MS)
        await expect(page.locator("#untrusted-note")).to_be_visible()
        assert page.url.endswith(server_page)  # swapped in place, no navigation

        await page.get_by_role("link", name=TEAM, exact=True).click()
        await set_role(page, "dev", "approver")
        await expect(role_of(page, "dev")).to_have_value("approver")
        await set_role(page, "lead", "member")
        await expect(page.locator("#flash")).to_contain_text("at least one admin")
        await page.reload()
        await expect(role_of(page, "dev")).to_have_value("approver")
        await expect(role_of(page, "lead")).to_have_value("admin")
        watch.console = [m for m in watch.console if "409" not in m]  # the refused change, on purpose
        await watch.assert_inert(page, "admin pages")
