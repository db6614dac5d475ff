"""Enterprise-managed authorization (SEP-990): a person who signed in through the organisation's identity
provider calls an MCP server under their own identity without ever seeing its consent page.

Three real processes: the OpenID provider of tests/oidc/provider.mjs (the console's single sign-on; it
exchanges ID tokens for identity assertion grants by RFC 8693 token exchange), Team notes (the demo's MCP
server, here taking those grants with the RFC 7523 JWT bearer grant from the one client registered for
it, console/demo/notes_enterprise.py) and the console in-process. The person's browser is an in-process
client for the console and an HTTP client with its own cookies at the provider's sign-in pages.

The provider and Team notes start once for the module: each test's console has a fresh database, each
test's browsers have no cookies at the provider, each test begins with the provider's accounts as
`ACCOUNTS` says, and reads Team notes' token log from where it ended when the test began.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import select, update

from console.db import utcnow
from console.errors import InvalidInput
from console.identity import create_token
from console.identity.models import SsoAssertion, User
from console.mcp.admin import ServerSettings, edit_server, server_for_admin, settings_of
from console.mcp.sealed import Outbound
from console.transactions import transaction
from tests.harness import (
    TEAM,
    Browser,
    Console,
    ServerSpec,
    browser,
    form_fields,
    html,
    one,
    promote,
    running_console,
    signed_in,
    text,
)
from tests.harness import (
    test_settings as console_settings,
)
from tests.oauth.notes import OAUTH_SERVER, OAuthLog
from tests.oidc.provider import OpenIdProvider, install, openid_provider
from tests.processes import ServerProcess, start_http_server

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CONSOLE_BASE = console_settings("sqlite://").base_url
SSO_CLIENT, SSO_SECRET = "approval-console", "sso-secret-" + secrets.token_urlsafe(16)
NOTES_CLIENT, NOTES_SECRET = "console-at-notes", "notes-secret-" + secrets.token_urlsafe(16)
ADA = {"preferred_username": "ada", "email": "ada@example.com", "groups": [f"{TEAM}:member"]}
ACCOUNTS = {"ada": ADA}
MAX_HOPS = 10


@dataclass
class Site:
    provider: OpenIdProvider
    notes: ServerProcess
    log: OAuthLog


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The provider and Team notes, for the module."""
    install()
    folder = tmp_path_factory.mktemp("enterprise")
    log = folder / "oauth-log.jsonl"
    with openid_provider(folder / "provider.txt") as provider:
        provider.configure(
            clients=[
                {
                    "client_id": SSO_CLIENT,
                    "client_secret": SSO_SECRET,
                    "redirect_uris": [f"{CONSOLE_BASE}/login/oidc/callback"],
                }
            ],
            accounts=ACCOUNTS,
        )
        env = {
            "OAUTH_LOG": str(log),
            "OAUTH_ENTERPRISE_IDP": provider.issuer,
            "OAUTH_ENTERPRISE_CLIENT": f"{NOTES_CLIENT}:{NOTES_SECRET}",
        }
        with start_http_server([sys.executable, OAUTH_SERVER], env, folder / "notes.txt") as notes:
            # The provider's policy: the console may ask for grants to Team notes, as its client there.
            provider.configure(assertion_clients={issuer_of(notes): NOTES_CLIENT})
            yield Site(provider, notes, OAuthLog(log))


@pytest.fixture
def site(processes: Site) -> Site:
    """The module's processes as this test needs them: the provider's accounts as `ACCOUNTS` says (a test
    may have removed one), and Team notes' log from now on."""
    processes.provider.configure(accounts=ACCOUNTS)
    return replace(processes, log=OAuthLog.from_now(processes.log.path))


def issuer_of(notes: ServerProcess) -> str:
    """Team notes' authorization server, as its metadata names it."""
    root = urlsplit(notes.url)._replace(path="").geturl()
    metadata = httpx.get(f"{root}/.well-known/oauth-authorization-server", timeout=10)
    assert metadata.status_code == 200, metadata.text
    issuer: str = metadata.json()["issuer"]
    return issuer


@asynccontextmanager
async def enterprise_console(database_url: str, site: Site) -> AsyncIterator[Console]:
    """The console signing people in through the provider, with Team notes set up by its admin for
    enterprise-managed authorization."""
    async with running_console(
        database_url,
        {"notes": ServerSpec(url=site.notes.url, oauth=True)},
        oidc_issuer=site.provider.issuer,
        oidc_client_id=SSO_CLIENT,
        oidc_client_secret=SSO_SECRET,
        oidc_teams_claim="groups",
        oidc_provider_name="Corp SSO",
    ) as console:
        settings = replace(
            await notes_settings(console),
            oauth_client_id=NOTES_CLIENT,
            oauth_client_secret=NOTES_SECRET,
            oauth_enterprise=True,
        )
        await set_notes(console, settings)
        yield console


async def notes_settings(console: Console) -> ServerSettings:
    async with transaction(console.runtime.factory) as session:
        return settings_of(await server_for_admin(session=session, by=None, team_name=TEAM, name="notes"))


async def set_notes(console: Console, settings: ServerSettings) -> None:
    async with transaction(console.runtime.factory) as session:
        await edit_server(
            session=session,
            by=None,
            team_name=TEAM,
            name="notes",
            settings=settings,
            outbound=Outbound.of(console.runtime.settings),
        )


async def sign_in_there(who: Browser, start: str, login: str) -> httpx.Response:
    """The person opens `start` (a console address that sends them to the provider), signs in there as
    `login`, and comes back: the console's answer to the provider's redirect."""
    sent = await who.client.get(start)
    assert sent.status_code == 303, sent.text
    url = sent.headers["location"]
    async with httpx.AsyncClient(timeout=10) as there:
        for _ in range(MAX_HOPS):
            if url.startswith(CONSOLE_BASE):
                parts = urlsplit(url)
                return await who.client.get(f"{parts.path}?{parts.query}")
            response = await there.get(url)
            if response.status_code == 200:  # the provider's sign-in page
                form = one(html(response), "form")
                action = str(response.url.join(str(form.get("action"))))
                response = await there.post(
                    action, data={**form_fields(form), "login": login, "password": "x"}
                )
            assert response.is_redirect, response.text
            url = str(response.url.join(response.headers["location"]))
    raise AssertionError(f"the provider never sent the browser back to the console (last: {url})")


@asynccontextmanager
async def ada_signed_in(console: Console) -> AsyncIterator[Browser]:
    """Ada signs in through the provider (her account and team membership come from it), and gets an
    API token for her agent."""
    async with browser(console) as ada:
        back = await sign_in_there(ada, "/login/oidc?next=/", "ada")
        assert back.status_code == 303, back.text
        page = await ada.client.get("/")
        ada.csrf = form_fields(one(html(page), 'form[action="/logout"]'))["csrf_token"]
        async with transaction(console.runtime.factory) as session:
            console.tokens["ada"] = (
                await create_token(session=session, user_name="ada", team_name=TEAM)
            ).token
        yield ada


async def whoami(console: Console, who: str) -> dict[str, Any]:
    return await console.call("notes", "whoami", {}, who=who)


def connect_question(call: dict[str, Any]) -> dict[str, Any]:
    assert call["status"] == "awaiting_input", call
    [question] = call["pending"]
    assert question["kind"] == "connect", question
    found: dict[str, Any] = question
    return found


async def test_a_person_signed_in_through_sso_calls_under_their_own_identity_with_no_consent_page(
    database_url: str, site: Site
) -> None:
    async with enterprise_console(database_url, site) as console, ada_signed_in(console):
        call = await whoami(console, "ada")
        assert call["status"] == "completed", (call, await console.audit_payloads("oauth_refused"))
        assert call["result"]["content"][0]["text"] == "signed in as ada"
        # One grant from the assertion, for Team notes' resource, and no refresh token: the identity
        # provider decides how long the person keeps access.
        assert site.log.events() == [
            {"event": "asserted", "subject": "ada", "scopes": ["notes:read"], "resource": site.notes.url}
        ]
        connected = await console.audit_payloads("oauth_connected")
        assert [p["issuer"] for p in connected] == [issuer_of(site.notes)]

        async with transaction(console.runtime.factory) as session:
            ada = (await session.execute(select(User).where(User.name == "ada"))).scalar_one()
        assert ada.email == "ada@example.com"  # notifications go where the provider says

        again = await whoami(console, "ada")
        assert again["result"]["content"][0]["text"] == "signed in as ada"
        assert len(site.log.events()) == 1  # the grant is reused while it lasts


async def test_a_teammate_without_a_single_sign_on_never_gets_anothers_grant(
    database_url: str, site: Site
) -> None:
    async with enterprise_console(database_url, site) as console, ada_signed_in(console):
        assert (await whoami(console, "ada"))["status"] == "completed"
        async with signed_in(console, "dev") as dev:
            question = connect_question(await whoami(console, "dev"))
            pressed = await dev.client.post(
                f"/elicitations/{question['id']}/connect", data={"csrf_token": dev.csrf}
            )
            assert pressed.status_code == 409, pressed.text
            assert "come from single sign-on: sign out, then sign in through" in pressed.text
        assert [e["subject"] for e in site.log.events()] == ["ada"]


async def test_once_the_id_token_expired_the_call_waits_until_the_person_signs_in_again(
    database_url: str, site: Site
) -> None:
    async with enterprise_console(database_url, site) as console, ada_signed_in(console) as ada:
        async with transaction(console.runtime.factory) as session:
            await session.execute(update(SsoAssertion).values(expires_at=utcnow() - timedelta(minutes=1)))
            await session.commit()
        call = await whoami(console, "ada")
        question = connect_question(call)
        assert site.log.events() == []  # nothing was exchanged with a stale ID token

        shown = html(await ada.client.get(f"/elicitations/{question['id']}"))
        assert text(one(shown, "#connect-form button")) == "Connect notes through Corp SSO"
        assert text(one(shown, ".authorization-server")).startswith("Corp SSO, your organisation's sign-in")
        listed = html(await ada.client.get("/connections"))
        assert "your organisation manages this connection" in text(one(listed, "section.connection"))

        pressed = await ada.client.post(
            f"/elicitations/{question['id']}/connect", data={"csrf_token": ada.csrf}
        )
        onward = one(html(pressed), "main a").get("href")
        assert onward == f"/reauth?next=/elicitations/{question['id']}", pressed.text
        back = await sign_in_there(ada, str(onward), "ada")
        assert back.status_code == 303, back.text
        assert back.headers["location"] == f"/elicitations/{question['id']}"

        done = await console.settle(call["id"], who="ada", after_round=call["round"])
        assert done["status"] == "completed", done
        assert done["result"]["content"][0]["text"] == "signed in as ada"
        assert [e["event"] for e in site.log.events()] == ["asserted"]


async def test_a_person_the_provider_removed_gets_no_grant_and_the_refusal_is_audited(
    database_url: str, site: Site
) -> None:
    async with enterprise_console(database_url, site) as console, ada_signed_in(console) as ada:
        site.provider.configure(accounts={"ada": None})
        question = connect_question(await whoami(console, "ada"))
        refused = await console.audit_payloads("oauth_refused")
        assert [(p["account"], p["reason"]) for p in refused] == [
            ("enterprise", "token_exchange_refused:invalid_grant")
        ]
        # Pressing Connect is refused the same way; the page points to the audit log, which has it.
        pressed = await ada.client.post(
            f"/elicitations/{question['id']}/connect", data={"csrf_token": ada.csrf}
        )
        assert pressed.status_code == 409, pressed.text
        assert "an administrator finds the reason in the audit log" in pressed.text
        refused = await console.audit_payloads("oauth_refused")
        assert [p["reason"] for p in refused] == ["token_exchange_refused:invalid_grant"] * 2
        assert site.log.events() == []


async def test_an_admin_cannot_turn_it_on_without_what_it_needs(database_url: str, site: Site) -> None:
    async with enterprise_console(database_url, site) as console:
        current = await notes_settings(console)
        assert current.oauth_enterprise
        for wrong, field, message in (
            (replace(current, oauth_team=True), "oauth_enterprise", "not a team account's"),
            (replace(current, oauth_client_id=""), "oauth_client_id", "needs the client registered"),
            (replace(current, oauth=False), "oauth_enterprise", "turn OAuth on too"),
        ):
            with pytest.raises(InvalidInput) as refused:
                await set_notes(console, wrong)
            assert message in refused.value.fields[field], refused.value.fields
    async with running_console(database_url, {}, tokens={}, dispatcher=False) as plain:  # no single sign-on
        async with transaction(plain.runtime.factory) as session:
            server = await server_for_admin(session=session, by=None, team_name=TEAM, name="notes")
            wanted = replace(
                settings_of(server),
                oauth_client_id=NOTES_CLIENT,
                oauth_client_secret=NOTES_SECRET,
                oauth_enterprise=True,
            )
            with pytest.raises(InvalidInput) as refused:
                await edit_server(
                    session=session,
                    by=None,
                    team_name=TEAM,
                    name="notes",
                    settings=wanted,
                    outbound=Outbound.of(plain.runtime.settings),
                )
        assert "needs single sign-on" in refused.value.fields["oauth_enterprise"]


async def test_an_admin_turns_it_on_in_the_server_form_and_a_member_cannot(
    database_url: str, site: Site
) -> None:
    async with enterprise_console(database_url, site) as console:
        await set_notes(console, replace(await notes_settings(console), oauth_enterprise=False))
        await promote(console, "lead", role="admin")
        page = f"/admin/teams/{TEAM}/servers/notes"
        async with signed_in(console, "lead") as lead:
            form = one(html(await lead.client.get(page)), "form#server-form")
            assert one(form, "#server-oauth-enterprise").get("checked") is None
            fields = {
                "csrf_token": lead.csrf,
                "transport": "http",
                "url": site.notes.url,
                "oauth_client_id": NOTES_CLIENT,
                "oauth_enterprise": "on",  # OAuth is implied
            }
            saved = await lead.client.post(page, data=fields)
            assert saved.status_code == 303, saved.text
            shown = await lead.client.get(page)
            assert one(html(shown), "#server-oauth-enterprise").get("checked") is not None
            assert NOTES_SECRET not in shown.text
            refused = await lead.client.post(page, data={**fields, "oauth_client_id": ""})
            assert refused.status_code == 422, refused.text
            error = one(html(refused), "#server-oauth-client ~ .field-error").get_text()
            assert error == "enterprise-managed authorization needs the client registered for it"
        async with signed_in(console, "dev") as dev:
            tried = await dev.client.post(
                page, data={**fields, "csrf_token": dev.csrf, "oauth_enterprise": ""}
            )
            assert tried.status_code == 403, tried.text
        assert (await notes_settings(console)).oauth_enterprise
