"""The screenshots the docs show are taken here, from a running `console demo`, so they show the console as
it is. A normal run writes them under the test artifacts; `make screenshots` (CONSOLE_UPDATE_SCREENSHOTS=1)
writes them into docs/assets/screenshots/, to be committed."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, ViewportSize, expect

from tests.processes import Demo, running_demo
from tests.web.browser import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, screenshot_dir

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
COMMITTED = DOCS / "assets" / "screenshots"
UPDATE_ENV = "CONSOLE_UPDATE_SCREENSHOTS"
CONSOLE = [sys.executable, "-m", "console.cli"]
DESKTOP = ViewportSize(width=1280, height=800)
PHONE = ViewportSize(width=390, height=844)
# Every picture this test takes; the docs may show these and no others.
SHOTS = {"question.png", "inbox.png", "gate.png", "audit.png", "question-phone.png"}
SHOWN = re.compile(r"assets/screenshots/([\w.-]+\.(?:png|jpe?g|gif|svg|webp))")


def destination() -> Path:
    if os.environ.get(UPDATE_ENV) == "1":
        COMMITTED.mkdir(parents=True, exist_ok=True)
        return COMMITTED
    return screenshot_dir()


def demo_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}


def banner_link(demo: Demo, pattern: str) -> str:
    found = re.search(pattern, "\n".join(demo.banner), flags=re.M)
    assert found, "\n".join(demo.banner)
    return found[1]


async def signed_in(browser: Browser, demo: Demo, name: str, viewport: ViewportSize) -> Page:
    """A browser of its own for `name`, signed in on the demo's sign-in page."""
    context = await browser.new_context(base_url=demo.url, viewport=viewport)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    page = await context.new_page()
    await page.goto("/login")
    await page.get_by_label("User name").fill(name)
    await page.get_by_label("Password").fill(demo.passwords[name])
    await page.get_by_role("button", name="Sign in").click()
    # On a phone the name is inside the closed menu: present, not visible.
    await expect(page.locator("header .signed-in-as")).to_have_text(f"Signed in as {name}")
    return page


async def shoot(page: Page, folder: Path, name: str) -> None:
    await page.screenshot(path=str(folder / name), animations="disabled", caret="hide")


@pytest.mark.anyio
@pytest.mark.browser
@pytest.mark.slow
async def test_the_docs_screenshots_are_taken_from_the_running_demo(tmp_path: Path, browser: Browser) -> None:
    folder = destination()
    with running_demo(CONSOLE, tmp_path, demo_env()) as demo:
        question = banner_link(demo, r"^  a deploy of auth-service waits for an answer: (\S+)$")
        gate = banner_link(demo, r"^  a production deploy of billing waits at its approval gate .*: (\S+)$")

        lead = await signed_in(browser, demo, "lead", DESKTOP)
        await lead.goto(question)
        await expect(lead.get_by_role("heading", level=1)).to_contain_text("auth-service")
        await shoot(lead, folder, "question.png")

        await lead.goto("/")
        await expect(lead.get_by_role("link", name=re.compile("auth-service")).first).to_be_visible()
        await shoot(lead, folder, "inbox.png")

        await lead.goto(gate)
        await expect(lead.get_by_role("heading", level=1)).to_have_text("Deploy billing to production?")
        await shoot(lead, folder, "gate.png")

        admin = await signed_in(browser, demo, "admin", DESKTOP)
        await admin.goto("/audit")
        await expect(admin.locator("#audit-events")).to_contain_text("call_started")
        await shoot(admin, folder, "audit.png")

        phone = await signed_in(browser, demo, "lead", PHONE)
        await phone.goto(question)
        await expect(phone.get_by_role("heading", level=1)).to_contain_text("auth-service")
        await shoot(phone, folder, "question-phone.png")

    assert {path.name for path in folder.glob("*.png")} >= SHOTS


def test_every_screenshot_the_docs_show_is_one_the_browser_test_takes() -> None:
    """No page shows a picture that nobody takes again when the pages change."""
    pages = [*DOCS.rglob("*.md"), REPO / "README.md"]
    shown = {name: page for page in pages for name in SHOWN.findall(page.read_text())}
    strays = {name: str(page.relative_to(REPO)) for name, page in shown.items() if name not in SHOTS}
    assert strays == {}
    kept = {path.name for path in COMMITTED.glob("*")} if COMMITTED.is_dir() else set()
    assert kept <= SHOTS, f"docs/assets/screenshots/ holds pictures no test takes: {sorted(kept - SHOTS)}"
