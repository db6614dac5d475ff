"""Single sign-on in Chromium through a real OpenID Provider process (tests/oidc/provider.mjs).

One `console serve` process (SQLite) is configured for provider A; provider B is a second process with
the same client registered, so it is another issuer the console must not trust. Every refused sign-in
must end on the failure page, open no session and leave a `sign_in_failed` event with its reason.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit, urlunsplit

import anyio
import pytest
from playwright.async_api import APIResponse, Browser, Page, expect
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.models import AuditEvent
from console.db import create_engine, session_factory, utcnow
from console.identity import create_team, create_user
from console.identity.models import Membership, OidcLogin, Team, User, WebSession
from console.identity.oidc import state_hash
from console.transactions import transaction
from console.web.oidc import STATE_COOKIE
from tests.harness import seed
from tests.oidc.provider import OpenIdProvider, install, openid_provider
from tests.processes import console_process
from tests.web.browser import ACTION_TIMEOUT_MS, new_page

# The provider's npm install (first run) happens in the module's first test.
pytestmark = [pytest.mark.anyio, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

CLIENT_ID = "approval-console"
CLIENT_SECRET = "client-secret-" + secrets.token_urlsafe(24)
PROVIDER_NAME = "Test IdP"
ACCOUNTS: dict[str, dict[str, Any]] = {
    "alice": {
        "preferred_username": "alice",
        "email": "alice@example.com",
        "groups": ["platform:approver", "elsewhere", "no-such-team:admin", "platform:owner"],
    },
    "lead-sso": {"preferred_username": "lead", "email": "lead@example.com", "groups": []},
    "carol": {"preferred_username": "carol", "groups": ["platform"]},
    "dave": {"preferred_username": "dave", "groups": ["platform:approver"]},
    "erin": {"email": "erin@example.com"},
}


@dataclass
class SsoSite:
    base: str
    database_url: str
    provider: OpenIdProvider
    other: OpenIdProvider  # another issuer with the same client registered


@pytest.fixture(scope="module")
def sso_site(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[SsoSite]:
    install()
    folder = tmp_path_factory.mktemp("sso")
    path = folder / "console.db"
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite+aiosqlite:///{path}"
    anyio.run(seed, url, {})
    anyio.run(_add_team, url, "ops")
    with (
        openid_provider(folder / "provider.txt") as provider,
        openid_provider(folder / "other.txt") as other,
        console_process(
            url,
            folder / "console.txt",
            CONSOLE_OIDC_ISSUER=provider.issuer,
            CONSOLE_OIDC_CLIENT_ID=CLIENT_ID,
            CONSOLE_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            CONSOLE_OIDC_TEAMS_CLAIM="groups",
            CONSOLE_OIDC_PROVIDER_NAME=PROVIDER_NAME,
        ) as base,
    ):
        client = {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": [f"{base}/login/oidc/callback"],
        }
        provider.configure(clients=[client], accounts=ACCOUNTS)
        other.configure(clients=[client], accounts=ACCOUNTS)
        yield SsoSite(base, url, provider, other)


async def _add_team(url: str, name: str) -> None:
    async with _db(url) as session:
        await create_team(session=session, name=name)


@asynccontextmanager
async def _db(url: str) -> AsyncIterator[AsyncSession]:
    engine = create_engine(url)
    try:
        async with transaction(session_factory(engine)) as session:
            yield session
    finally:
        await engine.dispose()


async def session_count(site: SsoSite) -> int:
    async with _db(site.database_url) as session:
        count: int = (await session.execute(select(func.count()).select_from(WebSession))).scalar_one()
    return count


async def last_failure(site: SsoSite) -> dict[str, Any]:
    async with _db(site.database_url) as session:
        event = (
            (
                await session.execute(
                    select(AuditEvent)
                    .where(AuditEvent.action == "sign_in_failed")
                    .order_by(AuditEvent.seq.desc())
                )
            )
            .scalars()
            .first()
        )
    assert event is not None
    payload: dict[str, Any] = json.loads(event.payload_json)
    return payload


async def sso_user(site: SsoSite, subject: str) -> User | None:
    async with _db(site.database_url) as session:
        query = select(User).where(User.oidc_issuer == site.provider.issuer, User.oidc_subject == subject)
        return (await session.execute(query)).scalar_one_or_none()


async def teams_of(site: SsoSite, user_id: str) -> dict[str, tuple[str, str]]:
    """Team name -> (role, source) of each membership the user has."""
    async with _db(site.database_url) as session:
        rows = await session.execute(
            select(Team.name, Membership.role, Membership.source)
            .join(Team, Team.id == Membership.team_id)
            .where(Membership.user_id == user_id)
        )
        return {name: (role, source) for name, role, source in rows}


async def authenticated_at(site: SsoSite, user_id: str) -> datetime:
    async with _db(site.database_url) as session:
        query = select(WebSession.authenticated_at).where(
            WebSession.user_id == user_id, WebSession.revoked_at.is_(None)
        )
        moment: datetime = (await session.execute(query)).scalar_one()
    return moment


async def login_at_provider(page: Page, login: str) -> None:
    """Fill the provider's development sign-in page (any password is accepted)."""
    field = page.locator('input[name="login"]')
    await expect(field).to_be_visible(timeout=ACTION_TIMEOUT_MS)
    await field.fill(login)
    await page.locator('input[name="password"]').fill("any-password")
    await page.locator('button[type="submit"]').click()


async def start_sso(page: Page, go: str = "/login") -> None:
    await page.goto(go)
    await page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()


async def sso_sign_in(page: Page, login: str, name: str, *, go: str = "/login") -> None:
    await start_sso(page, go)
    await login_at_provider(page, login)
    await expect(page.get_by_text(f"Signed in as {name}", exact=True)).to_be_visible()


async def expect_refused(page: Page, site: SsoSite, sessions_before: int, reason: str) -> None:
    await expect(page.get_by_role("heading", name="Sign-in failed")).to_be_visible()
    assert await session_count(site) == sessions_before
    assert (await last_failure(site))["reason"] == reason
    content = await page.content()
    assert "Traceback" not in content
    assert CLIENT_SECRET not in content
    await page.goto("/")
    await expect(page).to_have_url(re.compile(r"/login\?next="))


async def authorization_url(page: Page, site: SsoSite) -> str:
    """Start a sign-in from the page's browser (its cookies) and return where the console sends it."""
    response = await page.request.get(f"{site.base}/login/oidc", max_redirects=0)
    assert response.status == 303, await response.text()
    return response.headers["location"]


async def callback_url(page: Page, site: SsoSite, login: str, start: str | None = None) -> str:
    """Sign in at the provider as `login` and return the callback URL it answers with, unvisited.

    The browser shows the provider's sign-in page; the form is then posted, and the redirects followed,
    with the browser's own cookies but outside the page, so the console never sees the callback.
    """
    await page.goto(start or await authorization_url(page, site))
    form = page.locator("form", has=page.locator('input[name="login"]'))
    action = await form.get_attribute("action")
    assert action is not None
    response = await page.request.post(
        urljoin(page.url, action),
        form={"prompt": "login", "login": login, "password": "any-password"},
        max_redirects=0,
    )
    return await follow_to_callback(page, site, response)


async def follow_to_callback(page: Page, site: SsoSite, response: APIResponse) -> str:
    for _ in range(10):
        assert response.status in (302, 303), await response.text()
        location = urljoin(response.url, response.headers["location"])
        if location.startswith(f"{site.base}/login/oidc/callback?"):
            return location
        response = await page.request.get(location, max_redirects=0)
    raise AssertionError("the provider never sent the browser back to the console")


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    return urlunsplit(parts._replace(query=urlencode({**query, **changes})))


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def test_sign_in_through_the_provider_creates_the_user_with_the_claimed_teams(
    sso_site: SsoSite, browser: Browser
) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    await sso_sign_in(page, "alice", "alice")
    await expect(page).to_have_url(f"{site.base}/")
    alice = await sso_user(site, "alice")
    assert alice is not None
    assert (alice.name, alice.password_hash) == ("alice", None)
    assert await teams_of(site, alice.id) == {
        "platform": ("approver", "oidc"),
        "elsewhere": ("member", "oidc"),
    }

    # An admin adds alice to ops by hand; then the provider stops naming elsewhere and demotes her.
    async with _db(site.database_url) as session:
        await create_user(session=session, name="alice", team_name="ops", role="auditor")
    site.provider.configure(accounts={"alice": {**ACCOUNTS["alice"], "groups": ["platform"]}})
    before = await session_count(site)

    again = await new_page(browser, site.base)
    await again.goto("/tokens")
    await expect(again).to_have_url(re.compile(r"/login\?next=%2Ftokens$"))
    await again.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    await login_at_provider(again, "alice")
    await expect(again.get_by_text("Signed in as alice", exact=True)).to_be_visible()
    await expect(again).to_have_url(f"{site.base}/tokens")
    same = await sso_user(site, "alice")
    assert same is not None
    assert same.id == alice.id
    assert await session_count(site) == before + 1
    assert await teams_of(site, alice.id) == {"platform": ("member", "oidc"), "ops": ("auditor", "manual")}


async def test_an_sso_identity_never_takes_over_a_local_account_of_the_same_name(
    sso_site: SsoSite, browser: Browser
) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    await sso_sign_in(page, "lead-sso", "lead-2")
    async with _db(site.database_url) as session:
        lead = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
    assert (lead.oidc_issuer, lead.oidc_subject) == (None, None)
    newcomer = await sso_user(site, "lead-sso")
    assert newcomer is not None
    assert newcomer.name == "lead-2"
    assert newcomer.id != lead.id
    erin = await new_page(browser, site.base)
    await sso_sign_in(erin, "erin", "erin@example.com")  # no preferred_username: the email


async def test_a_callback_with_a_wrong_state_opens_no_session(sso_site: SsoSite, browser: Browser) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    callback = await callback_url(page, site, "carol")
    await page.goto(with_query(callback, state=secrets.token_urlsafe(32)))
    await expect_refused(page, site, before, "browser_binding_mismatch")


async def test_a_replayed_callback_opens_no_session(sso_site: SsoSite, browser: Browser) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    callback = await callback_url(page, site, "carol")
    await page.goto(callback)
    await expect(page.get_by_text("Signed in as carol", exact=True)).to_be_visible()
    before = await session_count(site)

    # Even with the browser-binding cookie put back, the state was spent by the first use.
    state = query_of(callback)["state"]
    await page.context.add_cookies(
        [{"name": STATE_COOKIE, "value": state, "domain": "127.0.0.1", "path": "/"}]
    )
    await page.goto(callback)
    await expect(page.get_by_role("heading", name="Sign-in failed")).to_be_visible()
    assert await session_count(site) == before
    assert (await last_failure(site))["reason"] == "unknown_state"


async def test_a_code_from_one_sign_in_with_the_state_of_another_opens_no_session(
    sso_site: SsoSite, browser: Browser
) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    first_callback = await callback_url(page, site, "carol")
    # The provider remembers carol: the second sign-in comes straight back with another code.
    second_start = await page.request.get(await authorization_url(page, site), max_redirects=0)
    second_callback = await follow_to_callback(page, site, second_start)
    first, second = query_of(first_callback), query_of(second_callback)
    assert first["state"] != second["state"]
    assert first["code"] != second["code"]
    await page.goto(with_query(second_callback, code=first["code"]))
    await expect_refused(page, site, before, "code_rejected")


async def test_an_altered_nonce_opens_no_session(sso_site: SsoSite, browser: Browser) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    url = await authorization_url(page, site)
    await page.goto(with_query(url, nonce="altered-" + secrets.token_urlsafe(16)))
    await login_at_provider(page, "carol")
    await expect_refused(page, site, before, "id_token_nonce")


async def test_an_answer_from_another_issuer_opens_no_session(sso_site: SsoSite, browser: Browser) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    ours = urlsplit(await authorization_url(page, site))
    assert ours.geturl().startswith(site.provider.issuer)
    await page.goto(f"{site.other.issuer}{ours.path}?{ours.query}")
    await login_at_provider(page, "carol")
    await expect_refused(page, site, before, "callback_issuer_mismatch")


async def test_a_callback_without_the_browser_binding_cookie_opens_no_session(
    sso_site: SsoSite, browser: Browser
) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    callback = await callback_url(page, site, "carol")
    await page.context.clear_cookies(name=STATE_COOKIE)
    await page.goto(callback)
    await expect_refused(page, site, before, "missing_browser_binding")


async def test_a_sign_in_older_than_ten_minutes_opens_no_session(sso_site: SsoSite, browser: Browser) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    before = await session_count(site)
    callback = await callback_url(page, site, "carol")
    async with _db(site.database_url) as session:
        state = query_of(callback)["state"]
        await session.execute(
            update(OidcLogin)
            .where(OidcLogin.id == state_hash(state))
            .values(created_at=utcnow() - timedelta(minutes=11))
        )
        await session.commit()
    await page.goto(callback)
    await expect_refused(page, site, before, "expired_state")


async def test_reauthentication_at_the_provider_moves_authenticated_at_forward(
    sso_site: SsoSite, browser: Browser
) -> None:
    site = sso_site
    page = await new_page(browser, site.base)
    await sso_sign_in(page, "dave", "dave")
    dave = await sso_user(site, "dave")
    assert dave is not None
    signed_in_at = await authenticated_at(site, dave.id)

    await page.goto("/reauth?next=%2Ftokens")
    await expect(page).to_have_url(re.compile(re.escape(site.provider.issuer)))
    await login_at_provider(page, "dave")  # prompt=login: the provider asks again despite its session
    await expect(page).to_have_url(f"{site.base}/tokens")
    confirmed_at = await authenticated_at(site, dave.id)
    assert confirmed_at > signed_in_at

    # Confirming as somebody else at the provider does not count, and dave stays signed in.
    await page.goto("/reauth")
    await login_at_provider(page, "carol")
    await expect(page.get_by_role("heading", name="Sign-in failed")).to_be_visible()
    assert (await last_failure(site))["reason"] == "reauth_other_account"
    assert await authenticated_at(site, dave.id) == confirmed_at
    await page.goto("/")
    await expect(page.get_by_text("Signed in as dave", exact=True)).to_be_visible()
