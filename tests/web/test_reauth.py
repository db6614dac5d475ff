"""Confirming a sign-in again with the password: the session's authenticated_at moves forward only for
the right password, failures slow only that session, and turning local sign-in off removes the form."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.identity.models import User, WebSession
from console.identity.sessions import open_session
from console.transactions import transaction
from tests.harness import (
    Browser,
    Console,
    browser,
    form_fields,
    html,
    one,
    running_console,
    signed_in,
    submit_login,
)

pytestmark = pytest.mark.anyio

WRONG = "not-the-password-7f3a"
SSO: dict[str, Any] = {
    "oidc_issuer": "https://id.example.com",
    "oidc_client_id": "console",
    "oidc_provider_name": "Example ID",
}


async def authenticated_at(console: Console, who: Browser) -> datetime:
    session_id = hashlib.sha256(who.client.cookies["console_session"].encode()).hexdigest()
    async with transaction(console.runtime.factory) as session:
        query = select(WebSession.authenticated_at).where(WebSession.id == session_id)
        moment: datetime = (await session.execute(query)).scalar_one()
    return moment


async def actions(console: Console) -> list[tuple[str, dict[str, object]]]:
    async with transaction(console.runtime.factory) as session:
        events = (await session.execute(select(AuditEvent).order_by(AuditEvent.seq))).scalars()
        return [(e.action, json.loads(e.payload_json)) for e in events]


async def confirm(who: Browser, password: str, next_path: str = "/runs/x") -> int:
    page = await who.client.get("/reauth", params={"next": next_path})
    assert page.status_code == 200, page.text
    fields = form_fields(one(html(page), 'form[action="/reauth"]'))
    assert fields["next"] == next_path
    response = await who.client.post("/reauth", data={**fields, "password": password})
    if response.status_code == 303:
        assert response.headers["location"] == next_path
    return response.status_code


async def test_the_right_password_moves_authenticated_at_forward(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as lead:
        signed_in_at = await authenticated_at(console, lead)
        assert await confirm(lead, "lead-pw-1") == 303
        assert await authenticated_at(console, lead) > signed_in_at
        action, payload = (await actions(console))[-1]
        assert (action, payload["method"]) == ("reauthenticated", "password")


async def test_a_wrong_password_leaves_authenticated_at_and_is_throttled(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as lead:
        signed_in_at = await authenticated_at(console, lead)
        assert await confirm(lead, WRONG) == 401
        assert await authenticated_at(console, lead) == signed_in_at
        assert (await actions(console))[-1][0] == "sign_in_failed"
        for _ in range(2):
            assert await confirm(lead, WRONG) == 401
        assert await confirm(lead, "lead-pw-1") == 429  # after three failures the session must wait
        assert await authenticated_at(console, lead) == signed_in_at
        assert WRONG not in json.dumps(await actions(console))


async def test_guessing_at_the_account_elsewhere_never_blocks_a_signed_in_persons_step_up(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as lead:
        signed_in_at = await authenticated_at(console, lead)
        # Guesses from another address and from the person's own (a shared NAT, say).
        for address in ("203.0.113.66", "127.0.0.1"):
            async with browser(console, address=address) as guesser:
                for _ in range(3):
                    assert (await submit_login(guesser.client, "lead", WRONG)).status_code == 401
                assert (await submit_login(guesser.client, "lead", "lead-pw-1")).status_code == 429
        assert await confirm(lead, "lead-pw-1") == 303
        assert await authenticated_at(console, lead) > signed_in_at


async def test_reauthentication_never_redirects_to_another_site(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as lead:
        page = await lead.client.get("/reauth", params={"next": "//evil.example"})
        fields = form_fields(one(html(page), 'form[action="/reauth"]'))
        assert fields["next"] == "/"
        response = await lead.client.post(
            "/reauth", data={**fields, "next": "https://evil.example", "password": "lead-pw-1"}
        )
        assert response.headers["location"] == "/"


async def test_with_local_sign_in_off_the_password_form_is_gone_and_posts_are_refused(
    database_url: str,
) -> None:
    async with running_console(database_url, {}, local_sign_in=False, **SSO) as console:
        async with browser(console) as who:
            page = await who.client.get("/login", params={"next": "/runs/1"})
            soup = html(page)
            assert soup.select('form[action="/login"]') == []
            assert soup.select('input[type="password"]') == []
            link = one(soup, "a#sign-in-oidc")
            assert link.get_text(strip=True) == "Sign in with Example ID"
            assert link["href"] == "/login/oidc?next=/runs/1"
            refused = await who.client.post(
                "/login", data={"name": "lead", "password": "lead-pw-1", "csrf_token": "x"}
            )
            assert refused.status_code == 403
            assert "console_session" not in who.client.cookies
            assert "signed_in" not in [action for action, _ in await actions(console)]

        # A password session from before the switch cannot be confirmed with the password either.
        async with transaction(console.runtime.factory) as session:
            user = (await session.execute(select(User).where(User.name == "lead"))).scalar_one()
            old = await open_session(session=session, user=user, method="password", client="test")
        async with browser(console) as who:
            who.client.cookies.set("console_session", old.token, domain="console.test")
            assert (await who.client.get("/reauth")).status_code == 403
            data = {"csrf_token": old.csrf_token, "password": "lead-pw-1"}
            assert (await who.client.post("/reauth", data=data)).status_code == 403


async def test_the_login_page_offers_single_sign_on_next_to_the_password_form(database_url: str) -> None:
    async with running_console(database_url, {}, **SSO) as console, browser(console) as who:
        soup = html(await who.client.get("/login"))
        assert one(soup, "a#sign-in-oidc")["href"] == "/login/oidc?next=/"
        one(soup, 'form[action="/login"]')
