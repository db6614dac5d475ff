"""The roots an admin sets reach `@modelcontextprotocol/server-filesystem` (npm), which asks `roots/list`
right after connecting and again when told `notifications/roots/list_changed`, and then works only in
those roots: set before its first call, and changed while it runs, on the same server process.

Through the gateway, an agent whose 2025-11-25 session declares roots has connections of its own: what
the server asks there outside a call is answered with that agent's roots (asked of its client, and asked
again when it says they changed), never another agent's; the session's server ends with the session.
Roots an admin set apply to every agent's calls, on the shared connection."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
import pytest
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning

from console.db import create_engine, session_factory
from console.mcp.admin_roots import set_roots
from console.mcp.roots import Root as AdminRoot
from console.transactions import transaction
from tests.harness import TEAM, Console, result_text, running_console
from tests.interop.filesystem import (
    SETTLE_SECONDS,
    TOOL,
    agent_with_roots,
    allowed_at_gateway,
    filesystem_server,
    folders,
    processes_become,
    processes_started_with,
)
from tests.site import running_site

pytestmark = pytest.mark.anyio


async def admin_sets_roots(database_url: str, folder: Path) -> None:
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            roots = [AdminRoot(folder.as_uri())]
            await set_roots(session=session, by=None, team_name=TEAM, server_name="files", roots=roots)
    finally:
        await engine.dispose()


async def allowed_once(console: Console, folder: Path) -> str:
    """What the server reports it may work in, asked through the console API until `folder` is among
    them (each ask is a call; the server applies the roots it was answered a moment after asking)."""
    with anyio.fail_after(SETTLE_SECONDS):
        while True:
            text = result_text(await console.call("files", TOOL, {}))
            if str(folder) in text.splitlines():
                return text


async def test_the_admins_roots_replace_the_servers_folders_and_a_change_reaches_the_same_process(
    database_url: str, tmp_path: Path
) -> None:
    start, first, second = folders(tmp_path, "start", "first", "second")
    async with running_console(database_url, {"files": filesystem_server(start)}) as console:
        await admin_sets_roots(database_url, first)
        assert await allowed_once(console, first) == f"Allowed directories:\n{first}"

        await admin_sets_roots(database_url, second)
        assert await allowed_once(console, second) == f"Allowed directories:\n{second}"
        # The running server was told (notifications/roots/list_changed) and asked again, rather than a
        # second server being started with the new roots.
        assert processes_started_with(start) == 1


@pytest.mark.slow
async def test_through_the_gateway_each_agents_session_gives_the_server_its_own_roots_and_their_change(
    database_url: str, tmp_path: Path
) -> None:
    start, devs, leads, devs_next = folders(tmp_path, "start", "devs", "leads", "devs-next")
    dev_roots, lead_roots = [devs], [leads]
    async with running_site(database_url, {"files": filesystem_server(start)}, tmp_path) as site:
        async with (
            agent_with_roots(site, "dev", dev_roots) as dev,
            agent_with_roots(site, "lead", lead_roots) as lead,
        ):
            # The server asked for roots right after connecting, outside any call, on each session's
            # connection: each got its own agent's, and only those.
            assert await allowed_at_gateway(dev, devs) == f"Allowed directories:\n{devs}"
            assert await allowed_at_gateway(lead, leads) == f"Allowed directories:\n{leads}"
            sessions = processes_started_with(start)
            assert sessions >= 2

            dev_roots[:] = [devs_next]
            with warnings.catch_warnings():  # deprecated as of 2026-07-28; what a 2025-11-25 session says
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await dev.send_roots_list_changed()
            assert await allowed_at_gateway(dev, devs_next) == f"Allowed directories:\n{devs_next}"
            assert await allowed_at_gateway(lead, leads) == f"Allowed directories:\n{leads}"
            # The change was told to the running server of dev's session, which asked again: no new one.
            assert processes_started_with(start) == sessions

        # Both sessions ended (their clients sent DELETE): the servers of their connections are gone.
        await processes_become(start, sessions - 2)


@pytest.mark.slow
async def test_through_the_gateway_the_admins_roots_apply_rather_than_the_agents(
    database_url: str, tmp_path: Path
) -> None:
    start, agents, first = folders(tmp_path, "start", "agents", "first")
    asked: list[ClientRequestContext] = []
    async with running_site(database_url, {"files": filesystem_server(start)}, tmp_path) as site:
        await admin_sets_roots(database_url, first)
        async with agent_with_roots(site, "dev", [agents], asked) as client:
            # The admin's roots name places on the console's host: an agent cannot widen them.
            assert await allowed_at_gateway(client, first) == f"Allowed directories:\n{first}"
        assert len(asked) == 1  # its roots were kept for the session, asked once, and not used


@pytest.mark.slow
async def test_another_user_who_sends_an_agents_session_id_is_refused_and_the_agents_roots_stay(
    database_url: str, tmp_path: Path
) -> None:
    start, devs = folders(tmp_path, "start", "devs")
    session_ids: list[str] = []
    async with (
        running_site(database_url, {"files": filesystem_server(start)}, tmp_path) as site,
        agent_with_roots(site, "dev", [devs], session_ids=session_ids) as dev,
    ):
        assert await allowed_at_gateway(dev, devs) == f"Allowed directories:\n{devs}"
        # lead sends a call with dev's session id: a session is its creator's credential's alone.
        headers = {
            **site.auth("lead"),
            "Mcp-Session-Id": session_ids[0],
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream",
        }
        params = {"name": f"files__{TOOL}", "arguments": {}}
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
        response = await site.api.post("/mcp", json=body, headers=headers)
        assert response.status_code == 404, response.text
        assert await allowed_at_gateway(dev, devs) == f"Allowed directories:\n{devs}"
