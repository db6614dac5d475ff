"""A site admin sets up a team, its deploy server and a "two approvers, not the requester, re-authenticate
within 5 minutes" policy through the web pages alone, in Chromium; then the policy holds for a real deploy.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from tests.cli_runner import run_console
from tests.site import running_site
from tests.web.browser import DEPLOY_QUESTION, DEPLOYED, RESUME_MS, new_page, shoot, sign_in

pytestmark = [pytest.mark.anyio, pytest.mark.browser]
TEAM = "release"


def make_site_admin(database_url: str, name: str) -> None:
    """What an operator does once: a user who may create teams (`console users add NAME --site-admin`)."""
    done = run_console(
        ["users", "add", name, "--site-admin", "--team", "elsewhere", "--role", "member"]
        + ["--password", f"{name}-pw-1"],
        env={**os.environ, "CONSOLE_DATABASE_URL": database_url},
    )
    assert done.returncode == 0, done.stderr


async def create_team_with_members(page: Page) -> None:
    await page.goto("/admin")
    await page.locator("#team-name").fill(TEAM)
    await page.get_by_role("button", name="Create team").click()
    await expect(page.get_by_role("heading", name=f"Team {TEAM}", level=1)).to_be_visible()
    for name, role in (("dev", "member"), ("lead", "approver"), ("lead2", "approver")):
        await page.locator("#member-name").fill(name)
        await page.locator("#member-role").select_option(role)
        await page.get_by_role("button", name="Add member").click()
        await expect(page.locator("#members")).to_contain_text(name)


async def add_deploy_server(page: Page, state_key: str) -> None:
    await page.goto(f"/admin/teams/{TEAM}/servers/new")
    await page.locator("#server-name").fill("deployer")
    await page.get_by_label("stdio (a program the console starts)").check()
    await page.locator("#server-command").fill(f"{sys.executable} -m console.demo.deployer")
    await page.locator("#env-name-new1").fill("DEPLOY_STATE_KEY")
    await page.locator("#env-value-new1").fill(state_key)
    await page.get_by_role("button", name="Add server").click()
    await expect(page).to_have_url(re.compile(rf"/admin/teams/{TEAM}/servers/deployer$"))
    await page.get_by_role("button", name="Test connection").click()
    tool = page.locator("#tools code", has_text=re.compile(r"^deploy$"))
    await expect(tool).to_have_count(1, timeout=RESUME_MS)  # the probe's answer, listing the tool
    await expect(page.locator("#probe-error")).to_have_count(0)
    await expect(page.locator("main")).not_to_contain_text(state_key)  # the secret is never shown back


async def set_deploy_policy(page: Page) -> None:
    await page.goto(f"/admin/teams/{TEAM}")
    await page.get_by_role("link", name="Edit the approval policy").click()
    await page.locator("#rule-scope").select_option("tool")
    await page.locator("#rule-server").select_option("deployer")
    await page.locator("#rule-tool").fill("deploy")
    await page.locator("#rule-approvals").fill("2")
    await page.locator("#rule-self").select_option("forbid")
    await page.locator("#rule-step-up").fill("5")
    await page.get_by_role("button", name="Save rule").click()
    row = page.locator("#policy-rules tbody tr[id]")
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("Tool deploy on deployer")
    await expect(row).to_contain_text("forbidden")
    await expect(row).to_contain_text("5 min")


async def create_agent_token(page: Page) -> str:
    await page.goto("/tokens")
    await page.get_by_label("Name").fill("release agent")
    await page.get_by_label("Team").select_option(label=TEAM)
    await page.get_by_role("button", name="Create token").click()
    token = await page.locator("#new-token").inner_text()
    assert token.startswith("mcpc_")
    return token


async def test_an_admin_sets_up_a_team_server_and_policy_on_the_pages_and_it_holds(
    tmp_path: Path, sqlite_url: str, state_key: str, browser: Browser
) -> None:
    async with running_site(sqlite_url, {}, tmp_path) as site:
        make_site_admin(sqlite_url, "boss")
        await run_the_scenario(browser, site.api, site.base, state_key)


async def run_the_scenario(browser: Browser, api: httpx.AsyncClient, base: str, state_key: str) -> None:
    boss = await new_page(browser, base)
    await sign_in(boss, "boss")
    await create_team_with_members(boss)
    await add_deploy_server(boss, state_key)
    await set_deploy_policy(boss)
    await shoot(boss, "team-setup-1-policy")

    dev = await new_page(browser, base)
    await sign_in(dev, "dev")
    auth = {"Authorization": f"Bearer {await create_agent_token(dev)}"}
    run = await api.post("/api/v1/runs", json={"team": TEAM, "title": "Release auth-service"}, headers=auth)
    assert run.status_code == 201, run.text
    body = {
        "server": "deployer",
        "method": "tools/call",
        "params": {"name": "deploy", "arguments": {"service": "auth-service"}},
    }
    started = await api.post(
        f"/api/v1/runs/{run.json()['id']}/calls", params={"wait": 20}, json=body, headers=auth
    )
    assert started.status_code == 202, started.text
    call = started.json()
    question = f"/elicitations/{call['pending'][0]['id']}"

    await dev.goto(question)  # the requester sees it, read-only
    await expect(dev.locator("#decision .notice")).to_contain_text("no self-approval")
    await expect(dev.locator("form#decision-form")).to_have_count(0)
    refused = await api.post(
        f"/api/v1/elicitations/{call['pending'][0]['id']}/answer",
        json={"action": "accept", "content": {"environment": "production", "confirm": True}},
        headers=auth,
    )
    assert refused.status_code == 403

    lead = await new_page(browser, base)
    await sign_in(lead, "lead", go=question)
    await expect(lead.locator("h1.question-message")).to_have_text(DEPLOY_QUESTION)
    policy = lead.locator("section.policy")
    await expect(policy).to_contain_text("2 different people must approve the same answer.")
    await expect(policy).to_contain_text(
        "The team's approvers may answer, but not the run's owner (no self-approval)."
    )
    await expect(policy).to_contain_text("Deciding needs a sign-in within the last 5 minutes.")
    await lead.get_by_label("Production").check()
    await lead.get_by_label("I have reviewed the changes").check()
    await lead.get_by_role("button", name="Accept", exact=True).click()
    await expect(lead.locator("#decision .notice")).to_contain_text("waits for 1 more approval")

    lead2 = await new_page(browser, base)
    await sign_in(lead2, "lead2", go=question)
    await lead2.get_by_role("button", name="Approve this answer").click()
    await expect(lead2.locator("#outcome .result")).to_have_text(DEPLOYED, timeout=RESUME_MS)
    await shoot(lead2, "team-setup-2-deployed")
    done = await api.get(f"/api/v1/calls/{call['id']}", headers=auth)
    assert done.json()["status"] == "completed"
