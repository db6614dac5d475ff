"""Servers' header and environment values: sealed at rest under CONSOLE_SECRET_KEY, never sent to a place
they were not entered for, and sealed on the first start when an earlier version left them in plain text."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from sqlalchemy import text as sql
from sqlalchemy.engine import make_url

from console.transactions import transaction
from tests.harness import (
    SECRET_KEY,
    TEAM,
    Browser,
    Console,
    Mrtr,
    ServerSpec,
    html,
    one,
    promote,
    register_server,
    result_text,
    running_console,
    seed,
    signed_in,
    user_id,
)
from tests.harness import text as shown
from tests.identity.test_credentials import raw_token, save_for
from tests.processes import read_log, recorder
from tests.web.test_admin_servers import add, audit_text, opened_headers, press_test_connection, stored

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"
API_KEY = "sk-live-4f9c2b7e-never-in-plain"  # a stand-in secret


async def raw_rows(console: Console) -> str:
    """The stored header and environment columns of every server, as the database holds them."""
    async with console.runtime.factory() as session:
        rows = (await session.execute(sql("SELECT headers_json, env_json FROM mcp_server"))).all()
    return "\n".join(f"{headers} {env}" for headers, env in rows)


def database_bytes(database_url: str) -> bytes:
    """A SQLite database's files, byte for byte (empty for PostgreSQL)."""
    if make_url(database_url).get_backend_name() != "sqlite":
        return b""
    path = Path(make_url(database_url).database or "")
    return b"".join(p.read_bytes() for p in path.parent.glob(f"{path.name}*"))


async def test_header_and_environment_values_are_stored_sealed_and_still_reach_the_server(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    assert mrtr_memory.spec.command is not None
    log_path = str(mrtr_memory.log)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            remote = {
                "name": "remote",
                "transport": "http",
                "url": "https://mcp.example.com/mcp",
                "header_name": ["X-Api-Key"],
                "header_value": [API_KEY],
            }
            assert await add(lead, remote) == 303
        stored_text = await raw_rows(console)
        assert API_KEY not in stored_text
        assert log_path not in stored_text  # the seeded stdio server's MRTR_LOG, sealed too
        assert '"sealed"' in stored_text
        assert API_KEY.encode() not in database_bytes(database_url)
        assert API_KEY not in await audit_text(console)
        # Sealed is not lost: the console opens them when it connects.
        assert opened_headers(console, await stored(console, "remote")) == {"X-Api-Key": API_KEY}
        done = await console.call("mrtr", "complete_now", {"x": "sealed-env"})
        assert result_text(done)
        assert [r["arguments"] for r in read_log(mrtr_memory.log)] == [{"x": "sealed-env"}]


async def test_without_a_console_secret_a_header_value_is_refused_with_a_clear_reason(
    database_url: str,
) -> None:
    async with running_console(database_url, {}, secret_key=None) as console:
        await promote(console, "lead", role="admin")
        async with signed_in(console, "lead") as lead:
            remote = {
                "name": "remote",
                "transport": "http",
                "url": "https://mcp.example.com/mcp",
                "header_name": ["X-Api-Key"],
                "header_value": [API_KEY],
            }
            refused = await lead.client.post(f"{BASE}/servers", data={"csrf_token": lead.csrf, **remote})
            assert refused.status_code == 422
            error = shown(one(html(refused), "#header-entries .field-error"))
            assert "set CONSOLE_SECRET_KEY to store header or environment values" in error
            assert API_KEY not in refused.text
            without_values = {k: v for k, v in remote.items() if not k.startswith("header")}
            assert await add(lead, without_values) == 303
        assert API_KEY.encode() not in database_bytes(database_url)


async def edit(who: Browser, name: str, data: Mapping[str, object]) -> str:
    response = await who.client.post(f"{BASE}/servers/{name}", data={"csrf_token": who.csrf, **data})
    assert response.status_code == 303, response.text
    return response.headers["location"]


async def test_pointing_a_server_elsewhere_drops_its_stored_header_unless_it_is_entered_again(
    database_url: str,
) -> None:
    with recorder() as own, recorder() as attacker:
        # Loopback recorders stand in for both hosts; private addresses are beside the point here.
        async with running_console(database_url, {}, allow_private_server_urls=True) as console:
            await promote(console, "lead", role="admin")
            async with signed_in(console, "lead") as lead:
                server = {
                    "name": "remote",
                    "transport": "http",
                    "url": own.url,
                    "header_name": ["X-Api-Key"],
                    "header_value": [API_KEY],
                }
                assert await add(lead, server) == 303
                await press_test_connection(lead, "remote")
                assert set(own.api_keys()) == {API_KEY}

                # The team admin points the server at their own host, leaving the saved key "unchanged".
                moved = {"transport": "http", "url": attacker.url, "header_name": ["X-Api-Key"]}
                location = await edit(lead, "remote", {**moved, "header_value": [""]})
                await press_test_connection(lead, "remote")
                assert attacker.seen
                assert set(attacker.api_keys()) == {None}
                assert opened_headers(console, await stored(console, "remote")) == {}
                # The page said it would, and says what it dropped.
                assert location == f"{BASE}/servers/remote?dropped=X-Api-Key"
                page = html(await lead.client.get(location))
                assert "Stored values dropped: X-Api-Key" in shown(one(page, "#dropped-notice"))
                assert "drops the stored header and environment values" in shown(one(page, "#moved-note"))

                # Entered again for the new place, it is sent there.
                await edit(lead, "remote", {**moved, "header_value": ["typed-again-5d1"]})
                attacker.seen.clear()
                await press_test_connection(lead, "remote")
                assert set(attacker.api_keys()) == {"typed-again-5d1"}
            log = await audit_text(console)
            assert '"dropped":["X-Api-Key"]' in log
            assert API_KEY not in log


async def test_pointing_a_per_user_server_elsewhere_deletes_everyones_saved_credentials(
    database_url: str,
) -> None:
    tokens = await seed(database_url, {})
    async with running_console(database_url, {}, tokens=tokens) as console:
        async with transaction(console.runtime.factory) as session:
            spec = ServerSpec(url="https://tracker.example/mcp", credential_name="Authorization")
            server_id = (await register_server(session, "tracker", spec)).id
        await save_for(database_url, "dev", server_id, raw_token("dev"), console_secret=SECRET_KEY)
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            same = {
                "transport": "http",
                "url": "https://tracker.example/mcp",
                "credential_name": "Authorization",
            }
            same |= {"internal_shown": "1", "internal": "on"}
            assert "?" not in await edit(lead, "tracker", same)
            async with console.runtime.factory() as session:
                kept = (await session.execute(sql("SELECT user_id FROM identity_server_credential"))).all()
            assert [row[0] for row in kept] == [await user_id(console, "dev")]

            location = await edit(lead, "tracker", {**same, "url": "https://tracker.example.net/mcp"})
            async with console.runtime.factory() as session:
                left = (await session.execute(sql("SELECT user_id FROM identity_server_credential"))).all()
            assert left == []
            assert location == f"{BASE}/servers/tracker?credentials=deleted"
            notice = shown(one(html(await lead.client.get(location)), "#dropped-notice"))
            assert "Everyone's saved credentials for this server were deleted" in notice
        assert '"credentials_dropped":1' in await audit_text(console)


async def test_values_an_earlier_version_stored_in_plain_text_are_sealed_on_the_first_start_with_a_key(
    database_url: str,
) -> None:
    with recorder() as remote:
        tokens = await seed(database_url, {})
        async with running_console(database_url, {}, tokens=tokens, secret_key=None) as console:
            async with console.runtime.factory() as session:
                await register_server(session, "legacy", ServerSpec(url=remote.url), secret_key=None)
                # How an earlier version stored it: the value itself.
                plain = json.dumps({"X-Api-Key": API_KEY})
                await session.execute(sql("UPDATE mcp_server SET headers_json = :h"), {"h": plain})
                await session.commit()
            assert API_KEY in await raw_rows(console)  # no key yet: it stays as it was, and still works
            await promote(console, "lead", role="admin", site_admin=True)
            async with signed_in(console, "lead") as lead:
                await press_test_connection(lead, "legacy")
            assert set(remote.api_keys()) == {API_KEY}

        remote.seen.clear()
        async with running_console(database_url, {}, tokens=tokens) as console:  # now with the key
            assert API_KEY not in await raw_rows(console)
            assert '"sealed"' in await raw_rows(console)
            assert "server_values_sealed" in await audit_names(console)
            async with signed_in(console, "lead") as lead:
                await press_test_connection(lead, "legacy")
            assert set(remote.api_keys()) == {API_KEY}


async def audit_names(console: Console) -> set[str]:
    async with console.runtime.factory() as session:
        return set((await session.execute(sql("SELECT action FROM audit_event"))).scalars())
