"""Layout in Chromium: the top bar holds "Sign out" on its first row at 1280px, and the audit page works at
phone width (no sideways scrolling, every filter and every cell labelled)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Browser, Page
from sqlalchemy import update

from console.db import create_engine, session_factory
from console.identity.models import User
from console.identity.teams import change_role
from tests.harness import TEAM, stdio_mrtr
from tests.site import running_site
from tests.web.browser import ACTION_TIMEOUT_MS, chromium, shoot, sign_in

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


async def open_page(browser: Browser, base: str, width: int, height: int) -> Page:
    context = await browser.new_context(base_url=base, viewport={"width": width, "height": height})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    return await context.new_page()


async def test_sign_out_stays_on_the_top_bars_first_row_at_1280_px(sqlite_url: str, tmp_path: Path) -> None:
    servers = {"mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}
    async with running_site(sqlite_url, servers, tmp_path) as site:
        engine = create_engine(sqlite_url)
        try:  # the longest bar: a site admin who administers a team sees every link
            async with session_factory(engine)() as session:
                await change_role(session=session, by=None, team_name=TEAM, user_name="lead", role="admin")
                await session.execute(update(User).where(User.name == "lead").values(site_admin=True))
                await session.commit()
        finally:
            await engine.dispose()
        async with chromium() as browser:
            page = await open_page(browser, site.base, 1280, 800)
            await sign_in(page, "lead")
            for where in ("/", "/runs", "/decided", "/audit", f"/admin/teams/{TEAM}"):
                await page.goto(where)
                found = await page.evaluate(SIGN_OUT)
                if not found["top"] <= found["brandMiddle"] <= found["bottom"]:
                    await shoot(page, "sign-out-wraps")
                assert found["lines"] == 1, where
                assert found["top"] <= found["brandMiddle"] <= found["bottom"], (where, found)


async def test_the_audit_page_fits_a_phone_with_every_field_labelled(sqlite_url: str, tmp_path: Path) -> None:
    servers = {"mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}
    async with running_site(sqlite_url, servers, tmp_path) as site, chromium() as browser:
        page = await open_page(browser, site.base, 390, 844)
        await sign_in(page, "viewer", go="/audit")
        found = await page.evaluate(PHONE)
        await shoot(page, "audit-at-390px")
        assert found["controls"] >= 8
        assert found["unlabelled"] == []
        assert found["cells"] > 0  # seeding wrote events: teams, people, tokens, the server
        assert found["bare"] == []
        assert found["scrollWidth"] <= found["width"]
