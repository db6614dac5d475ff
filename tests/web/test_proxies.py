"""Which client a request comes from: X-Forwarded-For counts only from CONSOLE_TRUSTED_PROXIES, never from
loopback by default, in the app and under a real `console serve`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.db import create_engine, session_factory
from tests.harness import browser, running_console, seed, submit_login
from tests.processes import console_process

pytestmark = pytest.mark.anyio


async def failed_sign_in_clients(database_url: str) -> list[str]:
    """The client address of each failed sign-in, as the audit log keeps it."""
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            query = select(AuditEvent).where(AuditEvent.action == "sign_in_failed").order_by(AuditEvent.seq)
            return [json.loads(e.payload_json)["client"] for e in (await session.execute(query)).scalars()]
    finally:
        await engine.dispose()


async def guess(client: httpx.AsyncClient, forwarded_for: str) -> int:
    client.headers["X-Forwarded-For"] = forwarded_for
    return (await submit_login(client, "lead", "guess")).status_code


async def test_only_a_trusted_proxy_may_name_the_client(database_url: str) -> None:
    async with running_console(database_url, {}, trusted_proxies="10.0.0.1, 10.1.0.0/16") as console:
        # Behind the proxy, each forwarded client is counted on its own; a spoofed entry left of the
        # proxy's own is ignored (the right-most address the proxies did not add is the client).
        async with browser(console, address="10.0.0.1") as proxy:
            statuses = [await guess(proxy.client, f"192.0.2.1, 198.51.100.{n}, 10.1.2.3") for n in range(5)]
            assert statuses == [401] * 5
        # From anyone else the header is ignored: rotating it does not dodge the wait.
        async with browser(console, address="203.0.113.66") as direct:
            statuses = [await guess(direct.client, f"198.51.100.{n}") for n in range(5)]
            assert statuses == [401, 401, 401, 429, 429]
        assert await failed_sign_in_clients(database_url) == [
            *(f"198.51.100.{n}" for n in range(5)),
            *["203.0.113.66"] * 3,
        ]


async def test_console_serve_ignores_forwarded_for_from_loopback_unless_told_to_trust_it(
    database_url: str, tmp_path: Path
) -> None:
    await seed(database_url, {})
    with console_process(database_url, tmp_path / "console.txt") as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            statuses = [await guess(client, f"198.51.100.{n}") for n in range(4)]
    assert statuses == [401, 401, 401, 429]
    assert await failed_sign_in_clients(database_url) == ["127.0.0.1"] * 3

    with console_process(database_url, tmp_path / "console.txt", CONSOLE_TRUSTED_PROXIES="127.0.0.1") as base:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            assert await guess(client, "198.51.100.77") == 401
    assert (await failed_sign_in_clients(database_url))[-1] == "198.51.100.77"
