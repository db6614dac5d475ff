"""The single sign-on pages without a provider: refusals are plain pages with the security headers, an
audit event and no session; nothing is offered when single sign-on is not configured."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import func, select

from console.audit.models import AuditEvent
from console.identity.models import OidcLogin
from tests.harness import Console, browser, html, one, running_console, signed_in
from tests.web.test_csrf_and_routes import header_problems

pytestmark = pytest.mark.anyio

# Port 9 (discard) on loopback: nothing listens, so the provider is unreachable.
UNREACHABLE: dict[str, Any] = {"oidc_issuer": "http://127.0.0.1:9", "oidc_client_id": "console"}


async def last_failure(console: Console) -> dict[str, Any]:
    async with console.runtime.factory() as session:
        query = (
            select(AuditEvent).where(AuditEvent.action == "sign_in_failed").order_by(AuditEvent.seq.desc())
        )
        event = (await session.execute(query)).scalars().first()
    assert event is not None
    payload: dict[str, Any] = json.loads(event.payload_json)
    return payload


async def test_a_callback_without_state_is_refused_with_a_plain_page(database_url: str) -> None:
    async with running_console(database_url, {}, **UNREACHABLE) as console, browser(console) as who:
        response = await who.client.get("/login/oidc/callback", params={"code": "c-1"})
        assert response.status_code == 400
        assert one(html(response), "h1").get_text(strip=True) == "Sign-in failed"
        assert header_problems(response) == []
        assert "console_session" not in who.client.cookies
        assert (await last_failure(console))["reason"] == "missing_state"
        refused = await who.client.get(
            "/login/oidc/callback", params={"error": "access_denied", "state": "x"}
        )
        assert refused.status_code == 400
        assert (await last_failure(console))["reason"] == "provider_error:access_denied"


async def test_an_unreachable_provider_is_a_failure_page_and_starts_nothing(database_url: str) -> None:
    async with running_console(database_url, {}, **UNREACHABLE) as console, browser(console) as who:
        response = await who.client.get("/login/oidc", params={"next": "/runs/1"})
        assert response.status_code == 400
        assert "console_oidc_state" not in who.client.cookies
        assert (await last_failure(console))["reason"] == "discovery_unavailable"
        async with console.runtime.factory() as session:
            assert (await session.execute(select(func.count()).select_from(OidcLogin))).scalar_one() == 0


async def test_without_single_sign_on_nothing_is_offered(database_url: str) -> None:
    async with running_console(database_url, {}) as console, browser(console) as who:
        assert html(await who.client.get("/login")).select("a#sign-in-oidc") == []
        assert (await who.client.get("/login/oidc")).status_code == 404
        assert (await who.client.get("/login/oidc/callback")).status_code == 404


async def test_the_reauthentication_page_carries_the_security_headers(database_url: str) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "lead") as lead:
        page = await lead.client.get("/reauth")
        assert page.status_code == 200
        assert header_problems(page) == []
        wrong = await lead.client.post("/reauth", data={"csrf_token": lead.csrf, "password": "nope"})
        assert wrong.status_code == 401
        assert header_problems(wrong) == []
