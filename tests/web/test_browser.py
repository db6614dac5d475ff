"""The web console in Chromium: sign in, answer questions, see results, the live inbox, inert server text.

Each test runs `console serve` as its own process against a freshly seeded database (the demo deployer
and the MRTR test server, both over stdio), starts calls through the agent API as `dev`, and answers them
in the browser as the approvers `lead` and `lead2`. See tests/web/browser.py for the browser set-up.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import anyio
import httpx
import pytest
from playwright.async_api import Browser, Page, Response, expect

from console.web.inbox import LISTENING
from tests.harness import ServerSpec, html, one, stdio_deployer, stdio_mrtr, submit_login
from tests.policies.setup import set_policy_at
from tests.site import Site, running_site
from tests.web.browser import (
    ACTION_TIMEOUT_MS,
    DEPLOY_QUESTION,
    DEPLOYED,
    LIVE_MS,
    RESUME_MS,
    Watch,
    new_page,
    shoot,
    sign_in,
)

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

INBOX_EVENTS = r"/inbox/events\?seen=[0-9a-f]{32}"  # the stream, told what the page showed


def servers(state_key: str, tmp_path: Path) -> dict[str, ServerSpec]:
    return {"deployer": stdio_deployer(state_key), "mrtr": stdio_mrtr(tmp_path / "mrtr.jsonl")}


@pytest.fixture
async def site(sqlite_url: str, state_key: str, tmp_path: Path) -> AsyncIterator[Site]:
    """The console on SQLite: pages render the same on either database."""
    async with running_site(sqlite_url, servers(state_key, tmp_path), tmp_path) as running:
        yield running


@pytest.fixture
async def site_any_db(database_url: str, state_key: str, tmp_path: Path) -> AsyncIterator[Site]:
    """The console on SQLite and on PostgreSQL, for what depends on the database: races and change feeds."""
    async with running_site(database_url, servers(state_key, tmp_path), tmp_path) as running:
        yield running


async def open_question_from_inbox(page: Page, message: str) -> None:
    link = page.get_by_role("link", name=message, exact=True)
    await expect(link).to_be_visible(timeout=ACTION_TIMEOUT_MS)
    await link.click()
    await expect(page.locator("h1.question-message")).to_have_text(message, timeout=ACTION_TIMEOUT_MS)


async def expect_status(response: Awaitable[Response], status: int) -> None:
    got = await response
    assert got.status == status, (
        f"{got.request.method} {got.url}: {got.status}, not {status}: {await got.text()}"
    )


async def choose_production(page: Page) -> None:
    await page.get_by_label("Production").check()
    await page.get_by_label("I have reviewed the changes").check()


async def test_approve_a_production_deploy(site_any_db: Site, browser: Browser, shot_prefix: str) -> None:
    site = site_any_db
    call = await site.deploy(title="Release auth-service")
    page = await new_page(browser, site.base)

    await page.goto("/")
    await expect(page).to_have_url(re.compile(r"/login\?next=%2F$"), timeout=ACTION_TIMEOUT_MS)
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await sign_in(page, "lead")

    await expect(page).to_have_url(f"{site.base}/")
    row = page.locator(".question-row")
    await expect(row).to_have_count(1, timeout=ACTION_TIMEOUT_MS)
    await expect(row).to_contain_text("dev's agent")
    await expect(row).to_contain_text("Release auth-service")
    await shoot(page, f"{shot_prefix}-1-inbox")

    await open_question_from_inbox(page, DEPLOY_QUESTION)
    await expect(page.locator(".asking .server-badge")).to_have_text("deployer")
    await expect(page.get_by_label("Staging")).to_be_checked()  # the schema's default
    await choose_production(page)
    await shoot(page, f"{shot_prefix}-2-question")

    await page.get_by_role("button", name="Accept", exact=True).click()
    outcome = page.locator("#outcome")
    await expect(outcome.locator(".result")).to_have_text(DEPLOYED, timeout=RESUME_MS)
    await expect(outcome).to_contain_text("accepted")
    await expect(outcome).to_contain_text("by lead")
    await expect(outcome).to_contain_text("The call ended: completed.")
    await shoot(page, f"{shot_prefix}-3-outcome")

    await outcome.get_by_role("link", name="See the whole run").click()
    await expect(page).to_have_url(re.compile(r"/runs/[^/]+$"), timeout=ACTION_TIMEOUT_MS)
    await expect(page.get_by_role("heading", name="Release auth-service", level=1)).to_be_visible()
    await expect(page.locator(".timeline .result")).to_have_text(DEPLOYED)
    await expect(page.locator(".rounds")).to_contain_text("accepted by lead")
    await shoot(page, f"{shot_prefix}-4-run")

    done = await site.get_call(call["id"])
    assert done["status"] == "completed"
    assert done["result"]["content"][0]["text"] == DEPLOYED
    answered = await site.question(call["pending"][0]["id"])
    assert answered["content"] == {"environment": "production", "confirm": True}


async def test_decline_a_deploy(site: Site, browser: Browser, shot_prefix: str) -> None:
    call = await site.deploy()
    page = await new_page(browser, site.base)
    await sign_in(page, "lead", go=f"/elicitations/{call['pending'][0]['id']}")  # sign-in returns here

    await expect(page.locator("h1.question-message")).to_have_text(DEPLOY_QUESTION)
    await page.get_by_role("button", name="Decline", exact=True).click()  # no valid form needed
    outcome = page.locator("#outcome")
    await expect(outcome.locator(".result")).to_have_text(
        "Deployment not started (decline).", timeout=RESUME_MS
    )
    await expect(outcome.locator(".status").first).to_have_text("declined")
    await shoot(page, f"{shot_prefix}-outcome")

    done = await site.get_call(call["id"])
    assert done["result"]["content"][0]["text"] == "Deployment not started (decline)."


async def test_a_missing_required_field_is_shown_next_to_it_and_typed_values_are_kept(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    call = await site.call("mrtr", "two_rounds", {"topic": "lunch"})
    page = await new_page(browser, site.base)
    await sign_in(page, "lead", go=f"/elicitations/{call['pending'][0]['id']}")
    await expect(page.locator("h1.question-message")).to_have_text("About lunch: what is your name?")

    # Round 1: the only field, "name", is required; the form has novalidate, so the server checks it.
    name = page.get_by_label("Name")
    await expect(name).to_have_value("")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.get_by_role("button", name="Accept", exact=True).click()
    await expect_status(posted.value, 422)
    field = page.locator(".field", has=name)
    await expect(field.locator(".field-error")).to_have_text("Error: This field is required")
    await expect(name).to_have_attribute("aria-invalid", "true")
    error_id = await field.locator(".field-error").get_attribute("id")
    assert error_id is not None
    assert error_id in ((await name.get_attribute("aria-describedby")) or "").split()
    await expect(page.locator("#decision-form [role=alert]").first).to_contain_text("need fixing")
    await shoot(page, f"{shot_prefix}-1-name-missing")

    await name.fill("Ada")
    await page.get_by_role("button", name="Accept", exact=True).click()
    outcome = page.locator("#outcome")
    await expect(outcome).to_contain_text("The server asks again", timeout=RESUME_MS)
    second = "Thanks Ada. How much and how many for lunch?"
    await outcome.get_by_role("link", name=second).click()
    await expect(page.locator("h1.question-message")).to_have_text(second, timeout=ACTION_TIMEOUT_MS)

    # Round 2: amount typed, count left out; the amount survives the round trip.
    amount, count = page.get_by_label("Amount"), page.get_by_label("Count")
    await amount.fill("12.5")
    async with page.expect_response(lambda r: r.request.method == "POST") as posted:
        await page.get_by_role("button", name="Accept", exact=True).click()
    await expect_status(posted.value, 422)
    await expect(page.locator(".field", has=count).locator(".field-error")).to_have_text(
        "Error: This field is required"
    )
    await expect(count).to_have_attribute("aria-invalid", "true")
    await expect(amount).to_have_value("12.5")
    await expect(amount).not_to_have_attribute("aria-invalid", "true")
    await expect(page.locator(".field", has=amount).locator(".field-error")).to_have_count(0)
    await shoot(page, f"{shot_prefix}-2-count-missing")

    await count.fill("3")
    await page.get_by_role("button", name="Accept", exact=True).click()
    await expect(page.locator("#outcome .result")).to_have_text("Ada 12.5 3", timeout=RESUME_MS)


async def test_the_second_of_two_browsers_is_told_who_answered(
    site_any_db: Site, browser: Browser, shot_prefix: str
) -> None:
    site = site_any_db
    call = await site.deploy()
    question = f"/elicitations/{call['pending'][0]['id']}"
    first, second = await new_page(browser, site.base), await new_page(browser, site.base)
    await sign_in(first, "lead", go=question)
    await sign_in(second, "lead2", go=question)
    for page in (first, second):
        await choose_production(page)

    await first.get_by_role("button", name="Accept", exact=True).click()
    await expect(first.locator("#outcome")).to_contain_text("by lead", timeout=ACTION_TIMEOUT_MS)

    async with second.expect_response(lambda r: r.request.method == "POST") as posted:
        await second.get_by_role("button", name="Accept", exact=True).click()
    await expect_status(posted.value, 409)
    warning = second.locator("#outcome .warning")
    await expect(warning).to_have_text("Someone was quicker: lead already answered (accepted).")
    await expect(second.locator("#outcome")).to_contain_text("accepted by lead")
    await expect(second.get_by_role("button", name="Accept", exact=True)).to_have_count(0)
    await shoot(second, f"{shot_prefix}-second-browser")

    answered = await site.question(call["pending"][0]["id"])
    assert answered["status"] == "accepted"
    assert answered["decided_by"] == "lead"


async def test_the_inbox_follows_new_and_answered_questions_without_reload(
    site_any_db: Site, browser: Browser, shot_prefix: str
) -> None:
    site = site_any_db
    page = await new_page(browser, site.base)
    # Signed in once the page listens for changes, so the question below cannot slip in before it does.
    async with page.expect_response(re.compile(INBOX_EVENTS + "$"), timeout=ACTION_TIMEOUT_MS):
        await sign_in(page, "lead2")
    empty = page.get_by_text("Nothing is waiting for you.")
    await expect(empty).to_be_visible()
    rows = page.locator(".question-row")
    await expect(rows).to_have_count(0)
    await page.evaluate("() => { window.__sameDocument = true; }")  # a reload would lose this

    call = await site.deploy(title="Live inbox")
    await expect(rows).to_have_count(1, timeout=LIVE_MS)
    await expect(rows.first).to_contain_text(DEPLOY_QUESTION)
    await expect(rows.first).to_contain_text("Live inbox")
    await expect(empty).to_have_count(0)
    await shoot(page, f"{shot_prefix}-1-arrived")

    answered = await site.answer(
        call["pending"][0]["id"], "accept", {"environment": "staging", "confirm": True}, who="lead"
    )
    assert answered.status_code == 200, answered.text
    await expect(rows).to_have_count(0, timeout=LIVE_MS)
    await expect(empty).to_be_visible()
    await shoot(page, f"{shot_prefix}-2-answered")
    assert await page.evaluate("() => window.__sameDocument === true"), "the inbox was reloaded"


async def test_the_live_inbox_refreshes_on_connecting_only_when_questions_changed_since_the_page(
    site_any_db: Site,
) -> None:
    # A refresh replaces the rows, and a tap on a row being replaced is lost: one at every page load
    # (before, whatever had changed) made a click on a question do nothing now and then.
    site = site_any_db
    async with httpx.AsyncClient(base_url=site.base, timeout=ACTION_TIMEOUT_MS / 1000) as lead:
        assert (await submit_login(lead, "lead", "lead-pw-1")).status_code == 303
        events = one(html(await lead.get("/")), "[sse-connect]").get("sse-connect")
        assert isinstance(events, str)
        assert re.fullmatch(INBOX_EVENTS, events), events

        assert await _until_listening(lead, events) == []  # nothing changed since the page
        await site.deploy(title="Arrived after the page")
        assert await _until_listening(lead, events) == ["changed"]
        assert await _until_listening(lead, "/inbox/events") == ["changed"]  # a page that did not say
        refused = await lead.get("/inbox/events", params={"seen": "not-a-token"})
        assert refused.status_code == 422, refused.text


async def _until_listening(client: httpx.AsyncClient, url: str) -> list[str]:
    """The events the inbox stream at `url` sends before it says it listens for changes."""
    sent: list[str] = []
    with anyio.fail_after(ACTION_TIMEOUT_MS / 1000):
        async with client.stream("GET", url) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line == LISTENING.strip():
                    return sent
                if line.startswith("event: "):
                    sent.append(line.removeprefix("event: "))
    raise AssertionError(f"the stream ended without listening; it sent {sent}")


PAYLOADS = {
    "script": "<script>window.__pwned=1</script>",
    "img-onerror": '<img src=x onerror="window.__pwned=2">',
    "svg-onload": '"><svg/onload=window.__pwned=3>',
    "attribute-break": "' autofocus onfocus='window.__pwned=4' x='",
    "htmx-attribute": '<div hx-get="/logout" hx-trigger="load">x</div>',
    "template": "{{7*7}}",
}


@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
async def test_hostile_server_text_is_inert_in_chromium(
    site: Site, browser: Browser, shot_prefix: str, payload: str
) -> None:
    call = await site.call("mrtr", "hostile", {"payload": payload}, title=payload)
    message = f"Hostile: {payload}"
    page = await new_page(browser, site.base)
    watch = await Watch.install(page)
    await sign_in(page, "lead")

    row = page.locator(".question-row")
    await expect(row.locator(".question-link")).to_have_text(message, timeout=ACTION_TIMEOUT_MS)
    await expect(row.get_by_role("link", name=payload, exact=True)).to_be_visible()  # the run title
    await watch.assert_inert(page, "inbox")

    await row.locator(".question-link").click()
    await page.wait_for_load_state("load", timeout=ACTION_TIMEOUT_MS)
    await watch.assert_inert(page, "question page, on load")
    await expect(page.locator("h1.question-message")).to_have_text(message, timeout=ACTION_TIMEOUT_MS)
    form = page.locator("#decision-form")
    named = form.locator("#field-0")  # the property named by the payload, no title: its name is the label
    await expect(form.locator('label[for="field-0"]')).to_contain_text(payload)
    await expect(named).to_have_value(payload)
    await expect(form.locator(".field-help").first).to_have_text(payload)
    await expect(form.locator("legend").filter(has_text=payload)).to_have_count(2)  # radios, checkboxes
    # Labelled by the payload: the text input, one radio button, the select and one checkbox.
    await expect(form.get_by_label(payload, exact=True)).to_have_count(4)
    await expect(form.locator('input[name="f1"]:checked')).to_have_value(payload)  # defaults
    await expect(form.locator('input[name="f3"]:checked')).to_have_value(payload)
    option = form.locator("select option").filter(has_text=payload)
    await expect(option).to_have_count(1)
    assert await option.get_attribute("value") == payload
    await expect(page.locator("#call-arguments")).to_contain_text("payload")
    await shoot(page, f"{shot_prefix}-1-question")
    await watch.assert_inert(page, "question page")

    await page.get_by_role("button", name="Accept", exact=True).click()
    result = f"hostile accept: {payload} echoed=True"
    await expect(page.locator("#outcome .result")).to_have_text(result, timeout=RESUME_MS)
    await watch.assert_inert(page, "outcome")

    await page.get_by_role("link", name="See the whole run").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(payload, timeout=ACTION_TIMEOUT_MS)
    await expect(page.locator(".timeline .result")).to_have_text(result)
    await expect(page.locator(".rounds a")).to_have_text(message)
    await shoot(page, f"{shot_prefix}-2-run")
    await watch.assert_inert(page, "run page")
    await expect(page.get_by_text("Signed in as lead", exact=True)).to_be_visible()  # not signed out

    done = await site.get_call(call["id"])
    assert done["result"]["content"][0]["text"] == result

    # The detectors work: markup that does get parsed is reported as a CSP violation.
    await page.evaluate(
        """() => document.body.insertAdjacentHTML("beforeend", '<img src="/x" onerror="window.__pwned=9">')"""
    )
    await page.wait_for_function("() => window.__cspViolations.length > 0", timeout=ACTION_TIMEOUT_MS)


async def test_the_core_path_works_without_javascript_and_by_keyboard_alone(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    """Sign in, open the question, choose and accept using only the keyboard, with scripts disabled."""
    call = await site.deploy()
    context = await browser.new_context(base_url=site.base, java_script_enabled=False)
    context.set_default_timeout(ACTION_TIMEOUT_MS)
    page = await context.new_page()
    await page.goto(f"/elicitations/{call['pending'][0]['id']}")
    await expect(page).to_have_url(re.compile(r"/login\?next="))
    await page.get_by_label("User name").focus()
    await page.keyboard.type("lead")
    await page.keyboard.press("Tab")
    await page.keyboard.type("lead-pw-1")
    await page.keyboard.press("Enter")  # a plain form post, then a redirect back to the question
    await expect(page.locator("h1.question-message")).to_have_text(DEPLOY_QUESTION)

    production = page.get_by_label("Production")
    await production.focus()
    await page.keyboard.press("Space")
    await expect(production).to_be_checked()
    confirm = page.get_by_label("I have reviewed the changes")
    await confirm.focus()
    await page.keyboard.press("Space")
    await expect(confirm).to_be_checked()
    await page.keyboard.press("Tab")  # the first button after the fields is Accept
    await expect(page.get_by_role("button", name="Accept", exact=True)).to_be_focused()
    await page.keyboard.press("Enter")

    # Without scripts the page refreshes itself (a <noscript> meta refresh) until the resume finished.
    await expect(page.locator("#outcome .result")).to_have_text(
        "auth-service 2.4.1 is being deployed to production.", timeout=RESUME_MS
    )
    await shoot(page, f"{shot_prefix}-outcome")


async def test_two_of_three_approvers_in_two_browsers(
    site_any_db: Site, browser: Browser, shot_prefix: str
) -> None:
    site = site_any_db
    await set_policy_at(site.database_url, "tool", server="deployer", tool="deploy", required_approvals=2)
    call = await site.deploy(title="Release auth-service")
    question_id = call["pending"][0]["id"]
    question = f"/elicitations/{question_id}"
    first, second = await new_page(browser, site.base), await new_page(browser, site.base)
    await sign_in(first, "lead", go=question)
    await sign_in(second, "lead2", go=question)
    await expect(first.locator("section.policy")).to_contain_text(
        "2 different people must approve the same answer."
    )
    await expect(first.locator("section.policy")).to_contain_text("Set by: tool rule deploy on deployer.")

    await choose_production(first)
    await first.get_by_role("button", name="Accept", exact=True).click()
    await expect(first.locator("#decision .notice")).to_contain_text(
        "You have signed this answer. It waits for 1 more approval from other people."
    )
    await shoot(first, f"{shot_prefix}-1-first-signed")
    assert (await site.get_call(call["id"]))["status"] == "awaiting_input"  # one accept does not resume
    await first.reload()
    await expect(first.get_by_role("button", name="Accept", exact=True)).to_have_count(
        0
    )  # one signature each

    await second.reload()
    await expect(second.locator("#fixed-content")).to_contain_text("environment production")
    await expect(second.get_by_role("button", name="Accept", exact=True)).to_have_count(0)
    await shoot(second, f"{shot_prefix}-2-co-sign")
    await second.get_by_role("button", name="Approve this answer").click()
    outcome = second.locator("#outcome")
    await expect(outcome.locator(".result")).to_have_text(DEPLOYED, timeout=RESUME_MS)
    await expect(outcome).to_contain_text("Signed by lead (approved), lead2 (approved).")
    await shoot(second, f"{shot_prefix}-3-deployed")

    answered = await site.question(question_id)
    assert (answered["status"], answered["approvals"], answered["decided_by"]) == ("accepted", 2, "lead2")
    assert answered["content"] == {"environment": "production", "confirm": True}
    done = await site.get_call(call["id"])
    assert done["result"]["content"][0]["text"] == DEPLOYED


async def test_a_decline_by_the_second_approver_ends_it_declined(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    await set_policy_at(site.database_url, required_approvals=2)
    call = await site.deploy()
    question = f"/elicitations/{call['pending'][0]['id']}"
    first, second = await new_page(browser, site.base), await new_page(browser, site.base)
    await sign_in(first, "lead", go=question)
    await choose_production(first)
    await first.get_by_role("button", name="Accept", exact=True).click()
    await expect(first.locator("#decision .notice")).to_contain_text("waits for 1 more approval")

    await sign_in(second, "lead2", go=question)
    await second.get_by_role("button", name="Decline", exact=True).click()
    outcome = second.locator("#outcome")
    await expect(outcome).to_contain_text("declined")
    await expect(outcome).to_contain_text("Signed by lead (approved), lead2 (declined).")
    await expect(outcome).to_contain_text("The call ended: completed.", timeout=RESUME_MS)
    await shoot(second, f"{shot_prefix}-declined")
    assert (await site.question(call["pending"][0]["id"]))["status"] == "declined"


async def test_the_count_signers_and_time_follow_every_swap(
    site: Site, browser: Browser, shot_prefix: str
) -> None:
    """lead signs, lead2 co-signs in another browser, and lead's page follows without a reload."""
    await set_policy_at(site.database_url, required_approvals=2)
    call = await site.deploy()
    question = f"/elicitations/{call['pending'][0]['id']}"
    first, second = await new_page(browser, site.base), await new_page(browser, site.base)
    await sign_in(first, "lead", go=question)
    await expect(first.locator(".approvals")).to_have_text("Approvals: 0 of 2")
    await first.evaluate("() => { window.__sameDocument = true; }")  # a reload would lose this

    await choose_production(first)
    await first.get_by_role("button", name="Accept", exact=True).click()
    await expect(first.locator("#decision .notice")).to_contain_text("waits for 1 more approval")
    await expect(first.locator(".approvals")).to_have_text("Approvals: 1 of 2")
    await expect(first.locator("ul.signatures li")).to_have_count(1)
    await expect(first.locator("ul.signatures li strong")).to_have_text("lead")
    await expect(first.locator(".time-left")).to_have_text(re.compile(r"^\d+ h left$"))
    await shoot(first, f"{shot_prefix}-1-signed")

    await sign_in(second, "lead2", go=question)
    await second.get_by_role("button", name="Approve this answer").click()
    await expect(second.locator("#outcome .status").first).to_have_text("accepted")
    await expect(second.locator(".approvals")).to_have_text("Approvals: 2 of 2")
    await expect(second.locator("ul.signatures li strong")).to_have_text(["lead", "lead2"])
    await expect(second.locator(".time-left")).to_have_count(0)
    await expect(second.locator(".ended")).to_have_text(re.compile(r"^ended .* ago$"))
    await shoot(second, f"{shot_prefix}-2-co-signed")

    # lead's page, left open, catches up by itself.
    await expect(first.locator(".approvals")).to_have_text("Approvals: 2 of 2", timeout=ACTION_TIMEOUT_MS)
    await expect(first.locator("#outcome .status").first).to_have_text("accepted")
    await expect(first.locator(".time-left")).to_have_count(0)
    await expect(first.locator("#outcome .result")).to_have_text(DEPLOYED, timeout=RESUME_MS)
    await shoot(first, f"{shot_prefix}-3-followed")
    assert await first.evaluate("() => window.__sameDocument === true"), "lead's page was reloaded"
