"""URL mode end to end in Chromium: dev connects their Example Tracker account; lead is refused.

The connect demo server (console/demo/connect/, the "Example Tracker") and `console serve` each run
as their own process. The tracker is registered as a per-user server of team `platform`: every call
carries its owner's own bearer token, saved encrypted under CONSOLE_SECRET_KEY. The tracker is on
loopback http, so the console runs with CONSOLE_ENV=dev (the gate opens http only to loopback then).

dev's agent calls `create_issue` through the API; the tracker answers with a URL-mode question that
points at its own /connect/start page, and counts every request to that page: the console must make
none. dev reviews the link on the consent gate, opens it (a new tab), closes that tab too early, opens the
link again from the question page, signs in at the tracker, comes back, clicks Check again, and the issue
is created for dev. lead gets 403 for the same link, audited.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from sqlalchemy import select

from console.audit import SYSTEM
from console.audit.models import AuditEvent
from console.db import create_engine, session_factory
from console.identity.credentials import CredentialCipher, save_credential
from console.identity.models import User
from console.transactions import transaction
from tests.harness import WAIT, ServerSpec, register_server, seed
from tests.processes import console_process
from tests.site import Site
from tests.tracker import Tracker
from tests.web.browser import ACTION_TIMEOUT_MS, RESUME_MS, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]

SECRET = "connect-flow-secret-" + "s" * 32  # CONSOLE_SECRET_KEY
MESSAGE = "Connect your Example Tracker account so the agent can create issues for you."
TEST_SECONDS = 150.0


async def register_tracker(database_url: str, tracker: Tracker) -> None:
    """The tracker as a per-user server of `platform`, with dev's and lead's own tokens saved sealed."""
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            spec = ServerSpec(url=tracker.process.url, credential_name="Authorization")
            server = await register_server(session, "tracker", spec)
            for name, tracker_user in tracker.users.items():
                user = (await session.execute(select(User).where(User.name == name))).scalar_one()
                await save_credential(
                    session=session,
                    cipher=CredentialCipher(SECRET),
                    actor=SYSTEM,
                    user_id=user.id,
                    server_id=server.id,
                    secret=tracker_user.token,
                )
    finally:
        await engine.dispose()


@asynccontextmanager
async def running_site(database_url: str, tracker: Tracker, tmp_path: Path) -> AsyncIterator[Site]:
    tokens = await seed(database_url, {})
    await register_tracker(database_url, tracker)
    env = {"CONSOLE_SECRET_KEY": SECRET, "CONSOLE_ENV": "dev"}
    with console_process(database_url, tmp_path / "console.txt", **env) as base:
        async with httpx.AsyncClient(base_url=base, timeout=60) as api:
            yield Site(base, tokens, api, database_url)


@pytest.fixture
async def site(browser: Browser, database_url: str, tracker: Tracker, tmp_path: Path) -> AsyncIterator[Site]:
    async with running_site(database_url, tracker, tmp_path) as running:
        yield running


async def ask_to_create(site: Site, tracker: Tracker, title: str) -> tuple[dict[str, Any], str, str]:
    """dev's agent calls create_issue: the call, its URL question's id and the link it asks to open."""
    call = await site.call("tracker", "create_issue", {"title": title}, title="File a tracker issue")
    [pending] = call["pending"]
    assert (pending["mode"], pending["message"]) == ("url", MESSAGE)
    link: str = (await site.question(pending["id"], who="dev"))["url"]
    assert link.startswith(f"{tracker.base}/connect/start?flow="), link
    return call, pending["id"], link


async def next_round(site: Site, call: dict[str, Any]) -> dict[str, Any]:
    """The call once it moved past `call`'s round (bounded)."""
    with anyio.fail_after(WAIT + 5):
        response = await site.api.get(
            f"/api/v1/calls/{call['id']}",
            params={"wait": WAIT, "after_round": call["round"]},
            headers=site.auth("dev"),
        )
    assert response.status_code in (200, 202), response.text
    body: dict[str, Any] = response.json()
    return body


async def refused_attempts(database_url: str, elicitation_id: str) -> list[tuple[str | None, str]]:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            rows = (
                await session.execute(
                    select(AuditEvent.actor_id, AuditEvent.payload_json)
                    .where(AuditEvent.action == "access_refused", AuditEvent.subject_id == elicitation_id)
                    .order_by(AuditEvent.seq)
                )
            ).all()
            return [(actor, payload) for actor, payload in rows]
    finally:
        await engine.dispose()


async def user_id(database_url: str, name: str) -> str:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            found: str = (await session.execute(select(User.id).where(User.name == name))).scalar_one()
            return found
    finally:
        await engine.dispose()


async def connect_at_tracker(tab: Page, tracker: Tracker, who: str) -> None:
    """What the person does on the tracker's page: sign in there with the tracker's own password."""
    await expect(tab.get_by_role("heading", name="Sign in to connect your account")).to_be_visible()
    await tab.get_by_label("User name").fill(who)
    await tab.get_by_label("Password").fill(tracker.users[who].password)
    await tab.get_by_role("button", name="Sign in and connect").click()
    await expect(tab.get_by_text("Connected. You can go back to the console.")).to_be_visible()
    await expect(tab.get_by_text(f"Signed in as {who}.")).to_be_visible()


async def test_dev_connects_the_tracker_and_the_issue_is_created(
    site: Site, tracker: Tracker, browser: Browser, shot_prefix: str
) -> None:
    title = f"Login is slow {secrets.token_hex(3)}"
    with anyio.fail_after(TEST_SECONDS):
        call, question_id, link = await ask_to_create(site, tracker, title)
        # The console only parked the link: it never fetched it (no preview, no HEAD).
        assert await tracker.stats() == {"connect_requests": 0, "connections": []}

        page = await new_page(browser, site.base)
        await sign_in(page, "dev")
        question_link = page.get_by_role("link", name=MESSAGE, exact=True)
        await expect(question_link).to_be_visible()
        await question_link.click()
        await expect(page).to_have_url(f"{site.base}/elicitations/{question_id}")
        await expect(page.locator("#decision-form strong")).to_have_text("127.0.0.1")
        await page.get_by_role("link", name="Review the link", exact=True).click()

        # The consent gate: the whole address, the site highlighted, and what is unusual about it.
        await expect(page).to_have_url(f"{site.base}/connect/{question_id}")
        await expect(page.locator(".url-text code")).to_have_text(link)
        await expect(page.locator("mark.domain")).to_have_text("127.0.0.1")
        warnings = page.locator(".link-review .warning")
        await expect(warnings).to_have_count(3)  # a bare IP address, an unusual port, plain http
        await expect(warnings.filter(has_text="plain http")).to_have_count(1)
        await expect(page.locator('[href^="http"], [href^="//"]')).to_have_count(0)  # shown, not linked
        await shoot(page, f"{shot_prefix}-1-gate")
        assert await tracker.stats() == {"connect_requests": 0, "connections": []}

        async with page.context.expect_page(timeout=ACTION_TIMEOUT_MS) as opened:
            await page.get_by_role("button", name="Open 127.0.0.1", exact=True).click()
        tab = await opened.value
        await expect(tab).to_have_url(link, timeout=ACTION_TIMEOUT_MS)
        assert await tab.evaluate("() => window.opener") is None  # noopener
        assert await tab.evaluate("() => document.referrer") == ""  # no referrer

        # Consent was recorded; the tracker has not seen the connection yet, so it asks again
        # with the identical link.
        answered = await site.question(question_id, who="dev")
        assert (answered["status"], answered["decided_by"]) == ("accepted", "dev")
        again = await next_round(site, call)
        assert again["status"] == "awaiting_input", again
        [reask] = again["pending"]
        assert reask["id"] != question_id
        assert (await site.question(reask["id"], who="dev"))["url"] == link

        # dev closes the tracker's tab before finishing there.
        await tab.close()

        # Back in the console tab (which moved on to the question by itself): it waits for dev to
        # finish at the tracker, without asking for consent again, and can open the link again.
        await expect(page).to_have_url(re.compile(r"/elicitations/[0-9a-f]+$"))
        await page.wait_for_load_state()
        await page.goto(f"/elicitations/{question_id}")
        await expect(page).to_have_url(f"{site.base}/elicitations/{reask['id']}")
        form = page.locator("#decision-form")
        await expect(form).to_contain_text("Waiting for you to finish at 127.0.0.1")
        await expect(form.get_by_role("button", name="Check again")).to_be_visible()
        await expect(form.get_by_role("button", name="Cancel")).to_be_visible()
        await expect(page.get_by_role("link", name="Review the link")).to_have_count(0)
        await shoot(page, f"{shot_prefix}-2-waiting")

        async with page.context.expect_page(timeout=ACTION_TIMEOUT_MS) as reopened:
            await page.get_by_role("button", name="Open the link again", exact=True).click()
        tab = await reopened.value
        await expect(tab).to_have_url(link, timeout=ACTION_TIMEOUT_MS)
        assert await tab.evaluate("() => window.opener") is None  # noopener
        assert await tab.evaluate("() => document.referrer") == ""  # no referrer
        await expect(page).to_have_url(f"{site.base}/elicitations/{reask['id']}")  # this tab stays
        assert (await site.question(reask["id"], who="dev"))["status"] == "pending"  # nothing answered

        await connect_at_tracker(tab, tracker, "dev")
        await shoot(tab, f"{shot_prefix}-3-tracker-connected")
        assert await tracker.stats() == {"connect_requests": 3, "connections": ["dev"]}

        await form.get_by_role("button", name="Check again").click()
        result = page.locator("#outcome pre.result")
        await expect(result).to_have_text(f"Issue created for dev: {title}", timeout=RESUME_MS)
        await expect(page.locator("#outcome .status-accepted")).to_have_text("accepted")
        await shoot(page, f"{shot_prefix}-4-result")

        await page.goto(f"/runs/{call['run_id']}")
        await expect(page.locator("pre.result")).to_have_text(f"Issue created for dev: {title}")
        await shoot(page, f"{shot_prefix}-5-run")

        done = await site.get_call(call["id"])
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == f"Issue created for dev: {title}"
        # Only dev's browser ever went to the link: two GETs of the page, one POST of its form.
        assert await tracker.stats() == {"connect_requests": 3, "connections": ["dev"]}


async def test_lead_cannot_open_or_answer_devs_link(
    site: Site, tracker: Tracker, browser: Browser, database_url: str, shot_prefix: str
) -> None:
    with anyio.fail_after(TEST_SECONDS):
        call, question_id, link = await ask_to_create(site, tracker, "Not for lead")
        page = await new_page(browser, site.base)
        await sign_in(page, "lead")

        # lead's inbox does not list dev's link.
        await expect(page.get_by_role("link", name=MESSAGE)).to_have_count(0)
        assert tracker.base not in await page.content()

        response = await page.goto(f"/connect/{question_id}")
        assert response is not None
        assert response.status == 403, await response.text()
        await expect(page.locator("main")).to_contain_text("This link is for dev only")
        html = await page.content()
        assert link not in html
        assert tracker.base not in html
        await shoot(page, f"{shot_prefix}-refused")

        # The question page: it waits for dev; the link is nowhere on it.
        response = await page.goto(f"/elicitations/{question_id}")
        assert response is not None
        assert response.status == 200
        await expect(page.locator("main")).to_contain_text("This question waits for dev")
        await expect(page.get_by_role("link", name="Review the link")).to_have_count(0)
        html = await page.content()
        assert link not in html
        assert tracker.base not in html

        # lead's API token cannot answer it either.
        answered = await site.answer(question_id, "accept", who="lead")
        assert answered.status_code == 403, answered.text
        assert link not in answered.text

        # Nor does the API show lead the question or its link.
        shown = await site.api.get(f"/api/v1/elicitations/{question_id}", headers=site.auth("lead"))
        assert shown.status_code == 404, shown.text
        listed = await site.api.get("/api/v1/elicitations", headers=site.auth("lead"))
        assert listed.status_code == 200, listed.text
        assert question_id not in listed.text
        call_view = await site.api.get(f"/api/v1/calls/{call['id']}", headers=site.auth("lead"))
        assert link not in call_view.text

        lead = await user_id(database_url, "lead")
        attempts = await refused_attempts(database_url, question_id)
        assert [actor for actor, _ in attempts] == [lead, lead, lead]
        assert '"attempt":"open_link:GET"' in attempts[0][1]
        assert '"attempt":"answer:accept"' in attempts[1][1]
        assert '"attempt":"view"' in attempts[2][1]  # reading it through the API is refused too
        assert all(tracker.base not in payload for _, payload in attempts)

        assert (await site.question(question_id, who="dev"))["status"] == "pending"
        assert await tracker.stats() == {"connect_requests": 0, "connections": []}
