"""Driving Debian's Chromium with Playwright against a console started as its own process.

The browser is never downloaded: Playwright is pointed at /usr/bin/chromium (Debian package `chromium`).
Without it the browser tests skip, unless CONSOLE_REQUIRE_BROWSER=1 (CI) makes that a failure.
Screenshots go to $CONSOLE_TEST_ARTIFACTS/screenshots (default test-artifacts/screenshots).
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.async_api import Browser, ConsoleMessage, Dialog, Page, Request, async_playwright, expect

from tests.harness import WAIT

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
REQUIRE_ENV = "CONSOLE_REQUIRE_BROWSER"
LAUNCH_TIMEOUT_MS = 30_000
ACTION_TIMEOUT_MS = 10_000  # every click and fill
# A load waits for the page's styles and scripts too; in one CI run a fresh context's first load took more
# than 10 s on the loaded 2-core machine (the console's log is now attached to such a failure).
NAVIGATION_TIMEOUT_MS = 30_000
LIVE_MS = 5_000  # the inbox must follow a change within this, without reload
RESUME_MS = int((WAIT + 5) * 1000)  # a resume through a freshly started stdio server

# Assertions retry until this unless a test passes its own timeout (Playwright's default is 5 s).
expect.set_options(timeout=ACTION_TIMEOUT_MS)

DEPLOY_QUESTION = "auth-service in version 2.4.1 — deploy where?"
DEPLOYED = "auth-service 2.4.1 is being deployed to production."


def screenshot_dir() -> Path:
    folder = Path(os.environ.get("CONSOLE_TEST_ARTIFACTS", "test-artifacts")) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def require_chromium() -> None:
    """Skip (or, with CONSOLE_REQUIRE_BROWSER=1, fail) when Debian's Chromium is not installed."""
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing (apt-get install chromium) so the browser tests cannot run"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires them")
    pytest.skip(reason)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, timeout=LAUNCH_TIMEOUT_MS
        )
        try:
            yield browser
        finally:
            await browser.close()


async def new_page(browser: Browser, base_url: str) -> Page:
    """A page in its own context (own cookies: one context is one person's browser)."""
    context = await browser.new_context(base_url=base_url, viewport={"width": 1100, "height": 900})
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    return await context.new_page()


async def sign_in(page: Page, name: str, *, go: str = "/") -> None:
    """Open `go`, get sent to the sign-in page, sign in as `name` and come back to `go`."""
    await page.goto(go)
    await expect(page).to_have_url(re.compile(r"/login\?next="), timeout=ACTION_TIMEOUT_MS)
    await page.get_by_label("User name").fill(name)
    await page.get_by_label("Password").fill(f"{name}-pw-1")
    await page.get_by_role("button", name="Sign in").click()
    # Read from the menu, which is closed on a phone.
    await expect(page.locator("header .signed-in-as")).to_have_text(
        f"Signed in as {name}", timeout=ACTION_TIMEOUT_MS
    )


async def shoot(page: Page, name: str) -> Path:
    path = screenshot_dir() / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True, timeout=ACTION_TIMEOUT_MS)
    return path


INSTRUMENT = """
(() => {
  window.__cspViolations = [];
  document.addEventListener("securitypolicyviolation", (event) => {
    window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI + " " + event.sample);
  });
})();
"""


@dataclass
class Watch:
    """What a page did that it should not: dialogs, console errors, page errors, requests, CSP reports.

    `assert_inert` also reads `window.__pwned` (which every payload tries to set) and the CSP violations
    that the init script collects on the current document.
    """

    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @classmethod
    async def install(cls, page: Page) -> Watch:
        watch = cls()

        async def on_dialog(dialog: Dialog) -> None:
            watch.dialogs.append(f"{dialog.type}: {dialog.message}")
            await dialog.dismiss()

        def on_console(message: ConsoleMessage) -> None:
            # Errors include Chromium's own CSP reports and htmx's failed requests; logs are not ours.
            if message.type == "error" or "pwned" in message.text:
                watch.console.append(f"{message.type}: {message.text}")

        def on_request(request: Request) -> None:
            watch.requests.append(f"{request.method} {request.url}")

        page.on("dialog", on_dialog)
        page.on("console", on_console)
        page.on("pageerror", lambda error: watch.errors.append(str(error)))
        page.on("request", on_request)
        await page.add_init_script(INSTRUMENT)
        return watch

    async def assert_inert(self, page: Page, where: str) -> None:
        """Nothing ran on the current document, and nothing happened in the page so far."""
        pwned = await page.evaluate("() => window.__pwned === undefined ? null : String(window.__pwned)")
        violations = await page.evaluate("() => window.__cspViolations")
        assert pwned is None, f"{where}: payload executed (window.__pwned = {pwned})"
        assert violations == [], f"{where}: CSP violations {violations}"
        assert self.dialogs == [], f"{where}: dialogs {self.dialogs}"
        assert self.errors == [], f"{where}: page errors {self.errors}"
        assert self.console == [], f"{where}: console messages {self.console}"
        stray = [r for r in self.requests if re.search(r"/logout|/x(\?|$)", r)]
        assert stray == [], f"{where}: requests the payload made {stray}"
