"""Layout in Chromium: the top bar holds "Sign out" on its first row at 1280px and is one row with a menu on a
phone; tables break no word at 1280px; the audit page works at phone width and pages; the server form's
radio buttons save what they say; error pages keep the navigation of whoever is signed in."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy import select, update

from console.db import create_engine, session_factory
from console.identity.models import User
from console.identity.teams import change_role
from console.mcp.admin import ServerSettings, settings_of
from console.mcp.models import McpServer
from console.transactions import transaction
from console.web.audit import PAGE_SIZE
from tests.harness import TEAM, ServerSpec, stdio_deployer, stdio_mrtr
from tests.policies.setup import set_policy_at
from tests.site import running_site
from tests.web.browser import ACTION_TIMEOUT_MS, shoot, sign_in
from tests.web.test_audit_paging import record_probes

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

# Where "Sign out" sits against the brand, and how many lines its own text takes.
SIGN_OUT = """() => {
  const buttons = [...document.querySelectorAll("header button")];
  const button = buttons.find(b => b.textContent.trim() === "Sign out");
  const brand = document.querySelector("header .brand").getBoundingClientRect();
  const box = button.getBoundingClientRect();
  const words = document.createRange();
  words.selectNodeContents(button);
  return {lines: words.getClientRects().length, top: box.top, bottom: box.bottom,
          brandMiddle: (brand.top + brand.bottom) / 2};
}"""
# Form controls without a label, cells without a label shown before them, and the page's width.
PHONE = """() => {
  const controls = [...document.querySelectorAll("main input, main select")].filter(c => c.type !== "hidden");
  const cells = [...document.querySelectorAll("#audit-events td")].filter(c => c.textContent.trim() !== "");
  const label = c => getComputedStyle(c, "::before").content;
  return {
    controls: controls.length,
    unlabelled: controls.filter(c => !c.labels.length || !c.labels[0].textContent.trim()).map(c => c.name),
    cells: cells.length,
    bare: cells.filter(c => ["none", "normal", '""'].includes(label(c))).map(c => c.textContent.trim()),
    scrollWidth: document.documentElement.scrollWidth,
    width: window.innerWidth,
  };
}"""


async def write_probes(database_url: str, count: int) -> None:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            await record_probes(session, TEAM, count)
    finally:
        await engine.dispose()


async def server_settings(database_url: str, name: str) -> ServerSettings:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            server = (await session.execute(select(McpServer).where(McpServer.name == name))).scalar_one()
            return settings_of(server)
    finally:
        await engine.dispose()


async def open_page(browser: Browser, base: str, width: int, height: int) -> Page:
    context = await browser.new_context(base_url=base, viewport={"width": width, "height": height})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    return await context.new_page()


async def test_sign_out_stays_on_the_top_bars_first_row_at_1280_px(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    servers = {"mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}
    async with running_site(sqlite_url, servers, tmp_path) as site:
        engine = create_engine(sqlite_url)
        try:  # the longest bar: a site admin who administers a team sees every link
            async with transaction(session_factory(engine)) as session:
                await change_role(session=session, by=None, team_name=TEAM, user_name="lead", role="admin")
                await session.execute(update(User).where(User.name == "lead").values(site_admin=True))
                await session.commit()
        finally:
            await engine.dispose()
        page = await open_page(browser, site.base, 1280, 800)
        await sign_in(page, "lead")
        for where in ("/", "/runs", "/decided", "/audit", f"/admin/teams/{TEAM}"):
            await page.goto(where)
            found = await page.evaluate(SIGN_OUT)
            if not found["top"] <= found["brandMiddle"] <= found["bottom"]:
                await shoot(page, "sign-out-wraps")
            assert found["lines"] == 1, where
            assert found["top"] <= found["brandMiddle"] <= found["bottom"], (where, found)


async def test_the_audit_page_fits_a_phone_with_every_field_labelled(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    servers = {"mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}
    async with running_site(sqlite_url, servers, tmp_path) as site:
        page = await open_page(browser, site.base, 390, 844)
        await sign_in(page, "viewer", go="/audit")
        found = await page.evaluate(PHONE)
        await shoot(page, "audit-at-390px")
        assert found["controls"] >= 8
        assert found["unlabelled"] == []
        assert found["cells"] > 0  # seeding wrote events: teams, people, tokens, the server
        assert found["bare"] == []
        assert found["scrollWidth"] <= found["width"]


# Words of table cells that the layout broke across lines. Hyphens, slashes, dots and underscores are
# places a line may end, so a word is what lies between them; a cell's own letters stay on one line.
BROKEN_WORDS = """() => {
  const broken = [];
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.parentElement.closest("td, th")) continue;
    const word = /[^\\s\\-\\/_.,:]+/g;
    let m;
    while ((m = word.exec(node.data))) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const rows = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (rows.size > 1) broken.push(m[0]);
    }
  }
  return broken;
}"""
CELLS = "() => document.querySelectorAll('main td').length"


async def as_admin(database_url: str, name: str = "lead", *, site_admin: bool = False) -> None:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            await change_role(session=session, by=None, team_name=TEAM, user_name=name, role="admin")
            if site_admin:
                await session.execute(update(User).where(User.name == name).values(site_admin=True))
            await session.commit()
    finally:
        await engine.dispose()


async def test_no_table_breaks_a_word_at_1280_px_on_the_decided_and_policies_pages(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    servers = {"deployer": stdio_deployer("k" * 32)}
    async with running_site(sqlite_url, servers, tmp_path) as site:
        await set_policy_at(
            sqlite_url,
            "tool",
            server="deployer",
            tool="deploy",
            condition='environment == "production"',
            required_approvals=2,
            no_self_approval=True,
            expiry_minutes=120,
        )
        for service in ("billing-reconciliation-service", "auth"):
            asked = await site.deploy(service)
            declined = await site.answer(asked["pending"][0]["id"], "decline", who="lead2")
            assert declined.status_code == 200, declined.text
        await as_admin(sqlite_url)
        page = await open_page(browser, site.base, 1280, 800)
        await sign_in(page, "lead")
        for name, where in (("decided", "/decided"), ("policies", f"/admin/teams/{TEAM}/policies")):
            await page.goto(where)
            assert await page.evaluate(CELLS) > 0, where
            broken = await page.evaluate(BROKEN_WORDS)
            if broken:
                await shoot(page, f"{name}-broken-words")
            assert broken == [], where
            assert await page.evaluate("() => document.documentElement.scrollWidth") <= 1280


async def test_on_a_phone_the_navigation_is_one_row_with_its_links_behind_the_menu(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    async with running_site(sqlite_url, {}, tmp_path) as site:
        page = await open_page(browser, site.base, 390, 844)
        await sign_in(page, "viewer")
        header = await page.locator("header.topbar").bounding_box()
        menu = page.get_by_text("Menu", exact=True)
        brand = await page.locator("header .brand").bounding_box()
        button = await menu.bounding_box()
        assert header is not None
        assert brand is not None
        assert button is not None
        assert header["height"] < 64  # one row
        assert abs((brand["y"] + brand["height"] / 2) - (button["y"] + button["height"] / 2)) < 4
        decided = page.locator("header").get_by_role("link", name="Decided")
        await expect(decided).to_be_hidden()
        main_top = await page.locator("main h1").bounding_box()
        assert main_top is not None
        assert main_top["y"] < 844 / 2  # the page starts on the first screen
        await shoot(page, "nav-at-390px")

        await menu.click()
        await expect(decided).to_be_visible()
        await expect(page.locator("header").get_by_role("button", name="Sign out")).to_be_visible()
        await shoot(page, "nav-at-390px-open")
        await decided.click()
        await expect(page).to_have_url(f"{site.base}/decided")
        await expect(page.locator("main h1")).to_have_text("Decided questions")

        wide = await open_page(browser, site.base, 1280, 800)
        await sign_in(wide, "viewer")
        await expect(wide.get_by_text("Menu", exact=True)).to_be_hidden()
        await expect(wide.locator("header").get_by_role("link", name="Decided")).to_be_visible()


async def test_the_audit_page_pages_older_and_newer_in_the_browser(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    async with running_site(sqlite_url, {}, tmp_path) as site:
        await write_probes(sqlite_url, PAGE_SIZE * 2 + 3)
        page = await open_page(browser, site.base, 1280, 800)
        await sign_in(page, "viewer", go="/audit?action=server_tested")
        rows = page.locator("#audit-events tbody tr")
        seen: list[str] = []
        for expected in (PAGE_SIZE, PAGE_SIZE, 3):
            await expect(rows).to_have_count(expected)
            seen += await page.locator("#audit-events tbody tr td:first-child").all_inner_texts()
            if expected == 3:
                await expect(page.locator("#next-page")).to_have_count(0)
            else:
                await page.get_by_role("link", name="Older events").click()
        assert len(seen) == len(set(seen)) == PAGE_SIZE * 2 + 3
        await page.get_by_role("link", name="Newer events").click()
        await expect(rows).to_have_count(PAGE_SIZE)
        assert (
            await page.locator("#audit-events tbody tr td:first-child").all_inner_texts()
            == seen[PAGE_SIZE : PAGE_SIZE * 2]
        )
        assert "action=server_tested" in page.url


async def test_the_server_forms_radio_buttons_save_what_they_say(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    servers = {"remote": ServerSpec(url="http://127.0.0.1:9/mcp")}  # saved, never reached
    async with running_site(sqlite_url, servers, tmp_path) as site:
        await as_admin(sqlite_url, site_admin=True)
        page = await open_page(browser, site.base, 1280, 800)
        await sign_in(page, "lead", go=f"/admin/teams/{TEAM}/servers/remote")
        for section in ("Connection", "Authentication", "Protocol", "Trust and retries"):
            await expect(page.locator("#server-form h3", has_text=section)).to_have_count(1)
        await page.get_by_label("Only 2025-11-25", exact=False).check()
        await page.get_by_label("Omit it").check()
        await page.get_by_label("Each person connects their own account", exact=False).check()
        await page.get_by_role("button", name="Save changes").click()
        await expect(page.locator("#server-form .field-error")).to_have_count(0)
        await expect(page.get_by_label("Only 2025-11-25", exact=False)).to_be_checked()
        await expect(page.get_by_label("Omit it")).to_be_checked()
        await expect(page.get_by_label("Each person connects their own account", exact=False)).to_be_checked()
        saved = await server_settings(sqlite_url, "remote")
        assert (saved.protocol_version, saved.oauth_resource_indicator) == ("2025-11-25", "omit")
        assert (saved.oauth, saved.oauth_team, saved.oauth_enterprise) == (True, False, False)


async def test_error_pages_keep_the_navigation_of_whoever_is_signed_in_and_no_more(
    sqlite_url: str, tmp_path: Path, browser: Browser
) -> None:
    async with running_site(sqlite_url, {}, tmp_path) as site:
        page = await open_page(browser, site.base, 1280, 800)
        await sign_in(page, "lead")
        await page.goto("/no-such-page")
        await expect(page.locator("main h1")).to_have_text("Not found")
        await expect(page.locator("header").get_by_role("link", name="Decided")).to_be_visible()
        await expect(page.locator("header .signed-in-as")).to_have_text("Signed in as lead")
        await page.get_by_role("link", name="Back to the inbox").click()
        await expect(page).to_have_url(f"{site.base}/")

        anonymous = await open_page(browser, site.base, 1280, 800)
        await anonymous.goto("/no-such-page")
        await expect(anonymous.locator("main h1")).to_have_text("Not found")
        await expect(anonymous.locator("header a")).to_have_text(["Approval console", "Sign in"])
        await expect(anonymous.get_by_text("Signed in as")).to_have_count(0)
