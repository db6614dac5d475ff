"""In Chromium on a phone's screen (390x844): a gate's page leads with the decision, and a gate's and a
form question's buttons are on the first screen without scrolling."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, ViewportSize, expect

from tests.harness import stdio_deployer
from tests.policies.setup import set_policy_at
from tests.site import Site, running_site
from tests.web.browser import ACTION_TIMEOUT_MS, NAVIGATION_TIMEOUT_MS, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

PHONE: ViewportSize = {"width": 390, "height": 844}


@pytest.fixture
async def site(sqlite_url: str, state_key: str, tmp_path: Path) -> AsyncIterator[Site]:
    async with running_site(sqlite_url, {"deployer": stdio_deployer(state_key)}, tmp_path) as running:
        yield running


async def test_a_gate_on_a_phone_shows_the_decision_and_its_buttons_on_the_first_screen(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    await set_policy_at(
        site.database_url,
        "tool",
        server="deployer",
        tool="deploy",
        gate=True,
        required_approvals=2,
        no_self_approval=True,
        step_up_minutes=5,
    )
    arguments = {"service": "billing", "version": "2.4.1", "environment": "production"}
    call = await site.call("deployer", "deploy", arguments, title="Release billing")
    context, page = await _phone(browser, site, f"/elicitations/{call['pending'][0]['id']}")

    await expect(page.locator("h1")).to_have_text("Deploy billing to production?")
    await expect(page.locator("#decision-summary")).to_contain_text("Deploy billing 2.4.1 to production")
    await expect(page.locator("#why-you")).to_have_text(
        "It waits for you: you are one of the team's approvers; 0 of 2 approvals given."
    )
    await expect(page.locator("#policy-line")).to_have_text(
        "Policy: 2 approvals from the team's approvers, not the requester, "
        "signed in within the last 5 minutes."
    )
    await shoot(page, f"{shot_prefix}-first-screen")
    await _on_the_first_screen(page, "Approve and deploy", "Reject", "Cancel the call")
    await context.close()


async def test_a_form_question_on_a_phone_shows_its_form_and_buttons_on_the_first_screen(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    call = await site.call("deployer", "deploy", {"service": "auth-service"}, title="Release auth-service")
    context, page = await _phone(browser, site, f"/elicitations/{call['pending'][0]['id']}")

    await expect(page.locator("h1")).to_have_text("auth-service in version 2.4.1 — deploy where?")
    await expect(page.get_by_label("Production")).to_be_visible()
    await shoot(page, f"{shot_prefix}-first-screen")
    await _on_the_first_screen(page, "Accept", "Decline", "Cancel")
    await context.close()


async def _phone(browser: Browser, site: Site, question: str) -> tuple[BrowserContext, Page]:
    """A phone's browser signed in as lead, on the question's page."""
    context = await browser.new_context(base_url=site.base, viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    context.set_default_navigation_timeout(NAVIGATION_TIMEOUT_MS)
    page = await context.new_page()
    await sign_in(page, "lead", go=question)
    return context, page


async def _on_the_first_screen(page: Page, *names: str) -> None:
    for name in names:
        button = page.get_by_role("button", name=name, exact=True)
        box = await button.bounding_box()
        assert box is not None, f"{name} is not shown"
        inside = (box["x"] >= 0, box["x"] + box["width"] <= PHONE["width"], box["y"] >= 0)
        assert inside == (True, True, True), f"{name} is off screen: {box}"
        assert box["y"] + box["height"] <= PHONE["height"], f"{name} is below the first screen: {box}"
