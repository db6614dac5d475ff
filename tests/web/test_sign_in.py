"""Signing in and out through the real form: redirects, cookie flags, generic errors, throttling, server-side
revocation, idle and absolute timeouts, the login form's CSRF check, and what the audit log keeps."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from console.audit.models import AuditEvent
from console.db import utcnow
from console.identity.models import WebSession
from console.transactions import transaction
from tests.harness import (
    Browser,
    Console,
    browser,
    form_fields,
    html,
    one,
    running_console,
    seed,
    sign_in,
    signed_in,
    submit_login,
    text,
)
from tests.processes import console_process

pytestmark = pytest.mark.anyio

COOKIE = "console_session"
URL_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_-]{43,}")


def set_cookies(response: httpx.Response) -> dict[str, tuple[str, dict[str, str]]]:
    """Each Set-Cookie header of a response: name -> (value, attributes with lower-case names)."""
    cookies: dict[str, tuple[str, dict[str, str]]] = {}
    for header in response.headers.get_list("set-cookie"):
        first, *rest = (part.strip() for part in header.split(";"))
        name, _, value = first.partition("=")
        attributes = {}
        for attribute in rest:
            key, _, attribute_value = attribute.partition("=")
            attributes[key.lower()] = attribute_value
        cookies[name] = (value.strip('"'), attributes)
    return cookies


def alert_text(response: httpx.Response) -> str:
    return one(html(response), '[role="alert"]').get_text(" ", strip=True)


async def is_signed_in(who: Browser) -> bool:
    response = await who.client.get("/")
    if response.status_code == 303:
        assert response.headers["location"].startswith("/login?next=")
        return False
    assert response.status_code == 200, response.text
    return True


async def age_sessions(console: Console, *, idle: timedelta, age: timedelta) -> None:
    """Make every browser session look last used `idle` ago and created `age` ago."""
    now = utcnow()
    async with transaction(console.runtime.factory) as session:
        await session.execute(update(WebSession).values(last_seen_at=now - idle, created_at=now - age))
        await session.commit()


async def test_right_password_redirects_to_the_local_page_asked_for(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        asked = await who.client.get("/inbox", params={"mode": "form"})
        assert asked.status_code == 303
        assert asked.headers["location"] == "/login?next=%2Finbox%3Fmode%3Dform"

        page = await who.client.get(asked.headers["location"])
        form = one(html(page), 'form[action="/login"]')
        assert form_fields(form)["next"] == "/inbox?mode=form"
        response = await who.client.post(
            "/login", data={**form_fields(form), "name": "lead", "password": "lead-pw-1"}
        )
        assert response.status_code == 303
        assert response.headers["location"] == "/inbox?mode=form"
        assert (await who.client.get("/inbox?mode=form")).status_code == 200


@pytest.mark.parametrize(
    "target",
    ["https://evil.example", "//evil", "//evil.example/path", "/\\evil.example", "javascript:alert(1)", ""],
)
async def test_sign_in_never_redirects_to_another_site(database_url: str, target: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        page = await who.client.get("/login", params={"next": target})
        fields = form_fields(one(html(page), 'form[action="/login"]'))
        assert fields["next"] == "/"  # the form never even carries it
        # A forged form that posts it anyway still lands on the inbox.
        response = await who.client.post(
            "/login", data={**fields, "next": target, "name": "lead", "password": "lead-pw-1"}
        )
        assert response.status_code == 303
        assert response.headers["location"] == "/"


async def test_session_cookie_is_http_only_lax_and_not_secure_over_http(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        response = await submit_login(who.client, "lead", "lead-pw-1")
        assert response.status_code == 303
        cookies = set_cookies(response)
        value, attributes = cookies[COOKIE]
        assert "httponly" in attributes
        assert attributes["samesite"].lower() == "lax"
        assert attributes["path"] == "/"
        assert "secure" not in attributes  # over plain http a Secure cookie would never come back
        assert "domain" not in attributes
        assert "max-age" not in attributes
        assert "expires" not in attributes
        assert URL_SAFE_TOKEN.fullmatch(value)
        assert f"__Host-{COOKIE}" not in cookies


async def test_session_cookie_is_secure_with_host_prefix_when_the_console_runs_on_https(
    database_url: str,
) -> None:
    async with (
        running_console(database_url, {}, base_url="https://console.test") as console,
        browser(console) as who,
    ):
        assert str(who.client.base_url).startswith("https://")
        response = await submit_login(who.client, "lead", "lead-pw-1")
        assert response.status_code == 303, response.text
        cookies = set_cookies(response)
        assert COOKIE not in cookies
        value, attributes = cookies[f"__Host-{COOKIE}"]
        assert {"secure", "httponly"} <= set(attributes)
        assert attributes["samesite"].lower() == "lax"
        assert attributes["path"] == "/"
        assert "domain" not in attributes  # __Host- cookies must not name a domain
        assert URL_SAFE_TOKEN.fullmatch(value)
        assert await is_signed_in(who)
        assert response.headers["strict-transport-security"].startswith("max-age=")


async def test_signing_out_over_https_deletes_the_host_prefixed_cookie(database_url: str) -> None:
    async with (
        running_console(database_url, {}, base_url="https://console.test") as console,
        signed_in(console, "lead") as who,
    ):
        out = await who.client.post("/logout", data={"csrf_token": who.csrf})
        assert out.status_code == 303
        # Browsers ignore a __Host- Set-Cookie without Secure, so the deletion must carry it too.
        value, attributes = set_cookies(out)[f"__Host-{COOKIE}"]
        assert "secure" in attributes, out.headers.get_list("set-cookie")
        assert attributes["path"] == "/"


async def test_every_sign_in_gets_a_new_session_token_even_over_a_planted_cookie(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        values = []
        for _ in range(3):
            async with browser(console) as who:
                response = await submit_login(who.client, "lead", "lead-pw-1")
                values.append(set_cookies(response)[COOKIE][0])
        async with browser(console) as who:
            planted = "A" * 43
            who.client.cookies.set(COOKIE, planted, domain="console.test")
            response = await submit_login(who.client, "lead", "lead-pw-1")
            values.append(set_cookies(response)[COOKIE][0])
        assert len(set(values)) == 4
        assert planted not in values


async def test_wrong_password_and_unknown_user_get_the_same_generic_answer(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        wrong = await submit_login(who.client, "lead", "not-the-password")
        unknown = await submit_login(who.client, "nobody-here", "not-the-password")
        for response in (wrong, unknown):
            assert response.status_code == 401
            assert COOKIE not in set_cookies(response)
        assert alert_text(wrong) == alert_text(unknown) == "Error: Wrong user name or password."

        def without_name(response: httpx.Response) -> str:
            soup = html(response)
            one(soup, "input#name")["value"] = ""
            return str(soup)

        # Nothing else on the page tells the two apart either.
        assert without_name(wrong) == without_name(unknown)
        assert not await is_signed_in(who)


def retry_after(response: httpx.Response) -> int:
    assert response.status_code == 429, response.text
    seconds = int(response.headers["retry-after"])
    assert 1 <= seconds <= 300
    wait = (
        "1 second"
        if seconds == 1
        else f"{seconds} seconds"
        if seconds < 120
        else f"{-(-seconds // 60)} minutes"
    )
    assert alert_text(response) == f"Error: Too many wrong passwords from here. Try again in {wait}."
    assert COOKIE not in set_cookies(response)
    return seconds


async def test_wrong_passwords_slow_the_guessing_client_but_never_lock_the_owner_out(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        async with browser(console, address="203.0.113.66") as guesser:
            statuses = [(await submit_login(guesser.client, "lead", "guess")).status_code for _ in range(5)]
            assert statuses == [401, 401, 401, 429, 429]
            # Even the right password waits there now.
            assert (
                retry_after(await submit_login(guesser.client, "lead", "lead-pw-1")) <= 2
            )  # 2 s after the 3rd
        # The owner, on their own device, signs in at once.
        async with browser(console, address="198.51.100.7") as owner:
            assert (await submit_login(owner.client, "lead", "lead-pw-1")).status_code == 303
        # Other accounts are not affected from anywhere.
        async with browser(console, address="203.0.113.66") as other:
            assert (await submit_login(other.client, "lead2", "lead2-pw-1")).status_code == 303


async def test_twenty_failures_from_one_client_slow_it_at_every_account(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        # Distinct names, so no account reaches its own limit.
        for n in range(19):
            assert (await submit_login(who.client, f"ghost{n}", "guess")).status_code == 401
        async with browser(console) as same_address:
            assert (await submit_login(same_address.client, "lead", "lead-pw-1")).status_code == 303
        assert (await submit_login(who.client, "ghost19", "guess")).status_code == 401

        for name in ("lead", "lead2", "dev"):
            async with browser(console) as same_address:
                retry_after(await submit_login(same_address.client, name, f"{name}-pw-1"))
        async with browser(console, address="10.0.0.8") as other_client:
            assert (await submit_login(other_client.client, "lead", "lead-pw-1")).status_code == 303


async def test_sign_out_revokes_the_session_on_the_server(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as who:
        token = who.client.cookies[COOKIE]
        refused = await who.client.post("/logout", data={})
        assert refused.status_code == 403  # no CSRF token: still signed in
        assert await is_signed_in(who)

        out = await who.client.post("/logout", data={"csrf_token": who.csrf})
        assert out.status_code == 303
        assert out.headers["location"] == "/login"
        cleared = set_cookies(out)[COOKIE]
        assert cleared[0] == "" or "max-age" in cleared[1]

        async with browser(console) as replay:
            replay.client.cookies.set(COOKIE, token, domain="console.test")
            response = await replay.client.get("/")
            assert response.status_code == 303
            assert response.headers["location"] == "/login?next=%2F"
            htmx = await replay.client.get("/", headers={"HX-Request": "true"})
            assert htmx.status_code == 401
            assert htmx.headers["hx-redirect"] == "/login?next=%2F"
            again = await replay.client.post("/logout", data={"csrf_token": who.csrf})
            assert again.status_code == 303
            assert again.headers["location"].startswith("/login?next=")


async def test_idle_session_ends_after_the_configured_idle_time(database_url: str) -> None:
    async with (
        running_console(database_url, {}, session_idle_minutes=5) as console,
        signed_in(console, "lead") as who,
    ):
        await age_sessions(console, idle=timedelta(minutes=4), age=timedelta(minutes=4))
        assert await is_signed_in(who)  # used within the idle time: still alive (and touched)
        await age_sessions(console, idle=timedelta(minutes=6), age=timedelta(minutes=6))
        response = await who.client.get("/elicitations/x")
        assert response.status_code == 303
        assert response.headers["location"] == "/login?next=%2Felicitations%2Fx"
        await age_sessions(console, idle=timedelta(0), age=timedelta(minutes=6))
        assert not await is_signed_in(who)  # revoked, not just expired for one request


async def test_default_idle_timeout_is_thirty_minutes(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as who:
        await age_sessions(console, idle=timedelta(minutes=29), age=timedelta(minutes=29))
        assert await is_signed_in(who)
        await age_sessions(console, idle=timedelta(minutes=31), age=timedelta(minutes=31))
        assert not await is_signed_in(who)


async def test_session_ends_after_the_absolute_lifetime_even_when_used(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as who:
        await age_sessions(console, idle=timedelta(0), age=timedelta(hours=11, minutes=59))
        assert await is_signed_in(who)
        await age_sessions(console, idle=timedelta(0), age=timedelta(hours=12, minutes=1))
        response = await who.client.get("/", headers={"HX-Request": "true"})
        assert response.status_code == 401
        assert response.headers["hx-redirect"] == "/login?next=%2F"
        assert not await is_signed_in(who)
        await sign_in(who, "lead")  # signing in again works
        assert await is_signed_in(who)


async def test_login_post_without_its_csrf_cookie_and_field_is_refused(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        page = await who.client.get("/login")
        fields = form_fields(one(html(page), 'form[action="/login"]'))
        token = fields["csrf_token"]
        assert who.client.cookies["console_login_csrf"] == token
        credentials = {"name": "lead", "password": "lead-pw-1", "next": "/"}

        no_field = await who.client.post("/login", data=credentials)
        wrong_field = await who.client.post("/login", data={**credentials, "csrf_token": token[::-1]})
        who.client.cookies.clear()
        no_cookie = await who.client.post("/login", data={**credentials, "csrf_token": token})
        for response in (no_field, wrong_field, no_cookie):
            assert response.status_code == 403
            assert COOKIE not in set_cookies(response)
        async with browser(console) as fresh:
            assert (await fresh.client.post("/login", data=credentials)).status_code == 403
        # None of these counted as a failed password either.
        async with transaction(console.runtime.factory) as session:
            actions = (await session.execute(select(AuditEvent.action))).scalars().all()
        assert "sign_in_failed" not in actions
        assert "signed_in" not in actions


async def test_sign_ins_and_outs_are_audited_without_secrets(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        login_csrf_seen = []
        secrets_seen = ["lead-pw-1", "wrong-Secret-77"]
        failed = await submit_login(who.client, "lead", "wrong-Secret-77")
        assert failed.status_code == 401
        login_csrf_seen.append(who.client.cookies["console_login_csrf"])
        await sign_in(who, "lead")
        secrets_seen += [who.client.cookies[COOKIE], who.csrf, *login_csrf_seen]
        out = await who.client.post("/logout", data={"csrf_token": who.csrf})
        assert out.status_code == 303

        async with transaction(console.runtime.factory) as session:
            events = (await session.execute(select(AuditEvent).order_by(AuditEvent.seq))).scalars().all()
            sessions = (await session.execute(select(WebSession))).scalars().all()
    signing = [e for e in events if e.action in ("sign_in_failed", "signed_in", "signed_out")]
    assert [e.action for e in signing] == ["sign_in_failed", "signed_in", "signed_out"]
    assert all(e.subject_type == "user" for e in signing)
    assert signing[1].actor_type == signing[2].actor_type == "user"
    assert signing[0].subject_id == signing[1].actor_id == signing[2].actor_id == signing[1].subject_id
    # No row of the whole table (seeding included) holds a password, session token or CSRF token.
    dump = "\n".join(
        " ".join(str(getattr(e, column.key)) for column in AuditEvent.__table__.columns) for e in events
    )
    for secret in secrets_seen:
        assert secret not in dump
    # The session table keeps a hash of the cookie token, never the token itself.
    assert len(sessions) == 1
    assert all(secret not in sessions[0].id for secret in secrets_seen)


async def test_the_sign_in_page_names_the_demo_users_only_in_the_demo(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        page = html(await who.client.get("/login"))
        assert page.select("#demo-hint") == []
        assert "console demo" not in text(page)


@pytest.mark.slow
async def test_console_serve_says_listening_only_once_a_person_can_sign_in(
    sqlite_url: str, tmp_path: Path
) -> None:
    await seed(sqlite_url, {})
    with console_process(sqlite_url, tmp_path / "console.txt") as base:  # returns as "listening" is read
        async with httpx.AsyncClient(base_url=base, timeout=30) as browser:  # no retry: it works at once
            fields = form_fields(one(html(await browser.get("/login")), 'form[action="/login"]'))
            signed_in = await browser.post("/login", data={**fields, "name": "lead", "password": "lead-pw-1"})
    assert signed_in.status_code == 303, signed_in.text
