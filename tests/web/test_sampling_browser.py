"""In Chromium: an approver writes the model's reply to a sampling request of the everything test server
(`test_input_required_result_sampling`, over stdio), and the call completes with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.harness import EVERYTHING, ServerSpec
from tests.policies.setup import set_policy_at
from tests.site import Site, running_site
from tests.web.browser import RESUME_MS, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]
EVERYTHING_STDIO = ServerSpec(command=EVERYTHING)
QUESTION = "Write the model's reply to: What is the capital of France?"


@pytest.fixture
async def site(sqlite_url: str, tmp_path: Path) -> AsyncIterator[Site]:
    async with running_site(sqlite_url, {"everything": EVERYTHING_STDIO}, tmp_path) as running:
        await set_policy_at(sqlite_url, "server", server="everything", sampling=True)
        yield running


async def test_an_approver_writes_the_models_reply_in_the_browser(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    call = await site.call("everything", "test_input_required_result_sampling", {})
    assert call["status"] == "awaiting_input", call
    page = await new_page(browser, site.base)
    await sign_in(page, "lead")

    link = page.get_by_role("link", name=QUESTION, exact=True)
    await link.click()
    await expect(page.locator("h1.question-message")).to_have_text(QUESTION)
    messages = page.locator("#sampling-messages li")
    await expect(messages.locator(".role")).to_have_text(["user"])
    await expect(messages.locator("pre")).to_have_text(["What is the capital of France?"])
    await expect(page.locator("#sampling-max-tokens")).to_have_text("at most 100 tokens")
    await page.get_by_role("button", name="Send reply").click()
    await expect(page.locator("#sampling-reply-error")).to_be_visible()  # nothing written yet
    await page.get_by_label("The model's reply").fill("Paris.")
    await shoot(page, f"{shot_prefix}-1-reply")
    await page.get_by_role("button", name="Send reply").click()

    outcome = page.locator("#outcome")
    await expect(outcome.locator(".result")).to_have_text("Model said: Paris.", timeout=RESUME_MS)
    await expect(outcome).to_contain_text("by lead")
    await shoot(page, f"{shot_prefix}-2-outcome")
    done = await site.get_call(call["id"])
    assert done["status"] == "completed"
