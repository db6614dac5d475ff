"""Settings that name something on the console's host are the site admin's alone: a team admin who tries
one on the admin pages gets 403, the attempt is audited as `access_refused` and nothing is saved, while a
site admin may. The breach these close: a team admin pointing a team account's workload identity token
file at a file of the console's host, which the console then read and sent to the token endpoint the
server's own metadata named — here a real HTTP server that keeps every request and never sees it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from console.identity.models import Team
from console.mcp.admin import ServerSettings, create_server, settings_of
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.notify.models import Channel
from console.transactions import transaction
from console.web.errors import as_sentence
from tests.harness import (
    MRTR_SERVER,
    TEAM,
    Console,
    ServerSpec,
    html,
    one,
    promote,
    running_console,
    signed_in,
)
from tests.harness import text as text_of
from tests.notify.kept import Kept
from tests.notify.receivers import posts, sink
from tests.processes import ServerProcess
from tests.web.test_admin_servers import stored
from tests.web.test_server_roles import post, refusal_text, refusals

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"
REMOTE = "https://mcp.example.com/mcp"  # a public name (connecting would check its address again)
STDIO = [sys.executable, MRTR_SERVER]
# What a workload identity token file pointed at the audit key would send: a token-like line.
PLANTED_LIBRARY = "/srv/uploads/planted.so"  # a library a team admin must never get loaded
KEY_LINE = "audit-signing-key.c2VjcmV0LWtleS1tYXRlcmlhbA.never-leaves"


@dataclass(frozen=True)
class Attempt:
    """A host setting tried on one admin page: by the team admin (`tried`), then by a site admin
    (`allowed`, the same unless given), as a browser without JavaScript posts the form."""

    path: str
    tried: dict[str, Any]
    allowed: dict[str, Any] | None = None
    allowed_path: str | None = None


WORKLOAD = {"transport": "http", "url": REMOTE, "oauth_team": "on", "oauth_client_id": "console"}
INTERNAL = {"internal_shown": "1", "internal": "on"}
ATTEMPTS = {
    "a stdio server": Attempt(
        "/servers", {"name": "planted", "transport": "stdio", "command": "sh -c 'id > planted.txt'"}
    ),
    "a stdio server's command": Attempt("/servers/local", {"transport": "stdio", "command": "sh -c id"}),
    "an environment variable": Attempt(
        "/servers/remote",
        {"transport": "http", "url": REMOTE, "env_name": "LD_PRELOAD", "env_value": PLANTED_LIBRARY},
        allowed={
            "transport": "stdio",
            "command": " ".join(STDIO),
            "env_name": "LD_PRELOAD",
            "env_value": PLANTED_LIBRARY,
        },
        allowed_path="/servers/local",
    ),
    "marking a server internal": Attempt(
        "/servers", {"name": "inside", "transport": "http", "url": REMOTE, **INTERNAL}
    ),
    "a new server on a link-local address": Attempt(
        "/servers",
        {"name": "metadata", "transport": "http", "url": "http://169.254.169.254/latest/meta-data/"},
        allowed={
            "name": "metadata",
            "transport": "http",
            "url": "http://169.254.169.254/latest/meta-data/",
            **INTERNAL,
        },
    ),
    "a server moved to a loopback address": Attempt(
        "/servers/remote",
        {"transport": "http", "url": "http://127.0.0.1:9/mcp"},
        allowed={"transport": "http", "url": "http://127.0.0.1:9/mcp", **INTERNAL},
    ),
    "where an internal server points": Attempt(
        "/servers/intranet", {"transport": "http", "url": "http://10.0.0.6:8080/mcp"}
    ),
    "a new server's workload identity token file": Attempt(
        "/servers", {"name": "wif", **WORKLOAD, "oauth_workload_token_file": "/proc/self/environ"}
    ),
    "a server's workload identity token file": Attempt(
        "/servers/remote", {**WORKLOAD, "oauth_workload_token_file": "/var/lib/console/audit.key"}
    ),
    "the team's default roots": Attempt("/roots", {"roots": "file:///"}),
    "a server's own roots": Attempt("/servers/remote/roots", {"roots": "file:///etc"}),
    "an internal channel": Attempt(
        "/channels", {"kind": "slack", "url": "http://10.0.0.5/hook", "internal": "on"}
    ),
    "a channel on a loopback address": Attempt(
        "/channels",
        {"kind": "webhook", "url": "https://127.0.0.1:9/hook"},
        allowed={"kind": "webhook", "url": "https://127.0.0.1:9/hook", "internal": "on"},
    ),
}


async def host_state(console: Console) -> dict[str, Any]:
    """Everything of the team that may name something on the console's host, as stored."""
    async with transaction(console.runtime.factory) as session:
        servers = {
            s.name: (
                s.transport,
                s.command_json,
                s.env_json,
                s.url,
                s.internal,
                s.oauth_client_json,
                s.roots_json,
            )
            for s in (await session.execute(select(McpServer))).scalars()
        }
        team = (await session.execute(select(Team).where(Team.name == TEAM))).scalar_one()
        channels = [(c.kind, c.host, c.internal) for c in (await session.execute(select(Channel))).scalars()]
    return {"servers": servers, "default_roots": team.default_roots_json, "channels": channels}


async def add_as_operator(console: Console, name: str, settings: ServerSettings) -> None:
    async with transaction(console.runtime.factory) as session:
        outbound = Outbound.of(console.runtime.settings)
        await create_server(
            session=session, by=None, team_name=TEAM, name=name, settings=settings, outbound=outbound
        )


@pytest.mark.parametrize("setting", list(ATTEMPTS))
async def test_a_host_setting_is_refused_to_a_team_admin_and_audited_and_a_site_admin_may_set_it(
    database_url: str, setting: str
) -> None:
    attempt = ATTEMPTS[setting]
    async with running_console(
        database_url, {"local": ServerSpec(command=STDIO)}, dispatcher=False, notifier=False
    ) as console:
        await promote(console, "lead", role="admin")
        await promote(console, "lead2", role="admin", site_admin=True)
        await add_as_operator(console, "remote", ServerSettings(transport="http", url=REMOTE))
        await add_as_operator(
            console,
            "intranet",
            ServerSettings(transport="http", url="http://10.0.0.5:8080/mcp", internal=True),
        )
        before = await host_state(console)
        async with signed_in(console, "lead") as lead:
            refused = await post(lead, f"{BASE}{attempt.path}", attempt.tried)
            assert refused.status_code == 403, refused.text
            assert "site admin" in refusal_text(refused)
        assert await host_state(console) == before  # nothing of it was saved
        [event] = await refusals(console)
        assert event["team"] is not None
        assert as_sentence(str(event["reason"])) == refusal_text(refused)  # the page says it as a sentence

        async with signed_in(console, "lead2") as boss:
            path = attempt.allowed_path or attempt.path
            allowed = await post(boss, f"{BASE}{path}", attempt.allowed or attempt.tried)
            assert allowed.status_code in (200, 303), allowed.text
        assert await host_state(console) != before
        assert len(await refusals(console)) == 1


def shown_form(page: BeautifulSoup) -> dict[str, str]:
    """What the server form posts when sent as the page shows it: its filled-in fields, ticked boxes and
    chosen transport (not its blank rows for new headers, nor the CSRF token, which `post` adds)."""
    data: dict[str, str] = {}
    for field in one(page, "#server-form").select("input, textarea"):
        name, kind = field.get("name"), field.get("type", "text")
        if not isinstance(name, str) or name == "csrf_token" or name in data or field.has_attr("disabled"):
            continue
        if kind in ("checkbox", "radio"):
            if field.has_attr("checked"):
                data[name] = str(field.get("value", "on"))
        elif field.name == "textarea" or field.get("value"):
            data[name] = field.get_text() if field.name == "textarea" else str(field.get("value"))
    return data


def requests_seen(folder: Path) -> Iterator[str]:
    """Every request the token endpoint's server got, as text: path, headers and body."""
    for kept in posts(Kept(folder)):
        yield json.dumps(kept)


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "audit.key"
    path.write_text(KEY_LINE + "\n")
    return path


@pytest.fixture
def attacker(tmp_path: Path) -> Iterator[ServerProcess]:
    """An HTTP server of the team admin's choosing: it keeps every request, its token endpoint's too."""
    with sink(tmp_path, tmp_path / "attacker") as process:
        yield process


async def test_a_team_admin_cannot_have_a_file_of_the_host_sent_to_a_token_endpoint(
    database_url: str, tmp_path: Path, secret_file: Path, attacker: ServerProcess
) -> None:
    # Private addresses are allowed here, so that only the workload identity token file stands between the
    # team admin and the token endpoint on this machine.
    async with running_console(database_url, {}, allow_private_server_urls=True) as console:
        await promote(console, "lead", role="admin")
        where = f"{attacker.url}/mcp"
        team_account = {
            "transport": "http",
            "url": where,
            "oauth_team": "on",
            "oauth_client_id": "console",
            "oauth_workload_token_file": str(secret_file),
        }
        async with signed_in(console, "lead") as lead:
            plain = {"name": "notes", "transport": "http", "url": where}
            assert (await post(lead, f"{BASE}/servers", plain)).status_code == 303
            tried = [
                await post(lead, f"{BASE}/servers/notes", team_account),
                await post(lead, f"{BASE}/servers", {**team_account, "name": "wif"}),
            ]
        # The team's agents call the servers: the console talks to them, and never with the file.
        for name in ("notes", "wif"):
            await console.start(name, "tools/call", {"name": "whoami", "arguments": {}}, wait=5)
        seen = list(requests_seen(tmp_path / "attacker"))
        assert not [request for request in seen if KEY_LINE in request]
        assert seen  # the console did reach the server

        assert [r.status_code for r in tried] == [403, 403]
        assert all("workload identity token file" in refusal_text(r) for r in tried)
        assert settings_of(await stored(console, "notes")).oauth_workload_token_file == ""
        assert [e["attempt"] for e in await refusals(console)] == ["change server", "add server"]


async def test_a_site_admins_workload_token_file_stays_on_a_team_admins_edit_and_never_moves_with_the_url(
    database_url: str, tmp_path: Path, secret_file: Path, attacker: ServerProcess
) -> None:
    async with running_console(database_url, {}, allow_private_server_urls=True) as console:
        await promote(console, "lead", role="admin")
        await promote(console, "lead2", role="admin", site_admin=True)
        async with signed_in(console, "lead2") as boss:
            federated = {
                "name": "notes",
                "transport": "http",
                "url": "https://notes.example.com/mcp",
                "oauth_team": "on",
                "oauth_client_id": "console",
                "oauth_workload_token_file": str(secret_file),
            }
            assert (await post(boss, f"{BASE}/servers", federated)).status_code == 303

        async with signed_in(console, "lead") as lead:
            page = html(await lead.client.get(f"{BASE}/servers/notes"))
            # Another field changes; the file stays the site admin's.
            same_place = {**shown_form(page), "trusted": "on"}
            edited = await post(lead, f"{BASE}/servers/notes", same_place)
            kept = await stored(console, "notes")
            # Pointed elsewhere, the file is not carried along: a team account then needs a credential
            # entered for the new place, and the one the team admin types is what goes there.
            moved = {**same_place, "url": f"{attacker.url}/mcp"}
            refused = await post(lead, f"{BASE}/servers/notes", moved)
            url_after_refusal = (await stored(console, "notes")).url
            typed = {**moved, "oauth_client_secret": "typed-by-the-team-admin"}
            saved = await post(lead, f"{BASE}/servers/notes", typed)
        await console.start("notes", "tools/call", {"name": "whoami", "arguments": {}}, wait=0)
        seen = list(requests_seen(tmp_path / "attacker"))
        assert not [request for request in seen if KEY_LINE in request]
        assert [request for request in seen if "/token" in request]  # the team account asked there

        assert not page.select('[name="oauth_workload_token_file"]')
        assert str(secret_file) in text_of(one(page, "#workload-note"))
        assert edited.status_code == 303, edited.text
        assert (kept.trusted, settings_of(kept).oauth_workload_token_file) == (True, str(secret_file))
        assert refused.status_code == 422, refused.text
        error = text_of(one(html(refused), "#server-oauth-secret ~ .field-error"))
        assert "workload identity token file" in error
        assert str(secret_file) in text_of(one(html(refused), "#workload-note"))  # still stored
        assert url_after_refusal == "https://notes.example.com/mcp"
        assert saved.status_code == 303, saved.text
        assert "dropped=workload+identity+token+file" in saved.headers["location"]
        assert settings_of(await stored(console, "notes")).oauth_workload_token_file == ""
