"""Names at /mcp never go to whichever server listed them first: a name two servers' tools would share
(possible only for servers named before such names were refused), or a resource URI two servers list,
is withheld from both, and each server is still reached under its own path; the console's own names are
no server's."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update

from console.mcp.models import McpServer
from tests.gateway.agents import mcp, payload
from tests.gateway.test_access import tool_names
from tests.harness import Console, running_console, stdio_mrtr

pytestmark = pytest.mark.anyio


async def rename(console: Console, old: str, new: str) -> None:
    """Give a server a name refused today, as one registered before."""
    async with console.app.state.factory() as session:
        await session.execute(update(McpServer).where(McpServer.name == old).values(name=new))
        await session.commit()


async def pid(console: Console, name: str, path: str = "/mcp") -> str:
    called = payload(await mcp(console, "tools/call", {"name": name, "arguments": {}}, who="dev", path=path))
    assert "result" in called, called
    text: str = called["result"]["content"][0]["text"]
    return text


async def test_tools_two_servers_would_share_at_mcp_are_withheld_and_each_server_answers_at_its_path(
    database_url: str, tmp_path: Path
) -> None:
    servers = {name: stdio_mrtr(tmp_path / f"{name}.jsonl") for name in ("m_x", "dotted", "own")}
    async with running_console(database_url, servers) as console:
        await rename(console, "dotted", "m.x")  # at /mcp its tools would be m_x__<tool> too
        await rename(console, "own", "console")  # its tool `await` would be console__await
        listed = await mcp(console, "tools/list", who="dev")
        names = [tool["name"] for tool in payload(listed)["result"]["tools"]]
        assert [name for name in names if name.startswith(("m_x__", "m_x_"))] == []
        assert [name for name in names if name.startswith("console__")] == ["console__await"]
        refused = payload(await mcp(console, "tools/call", {"name": "m_x__pid", "arguments": {}}, who="dev"))
        assert refused["error"]["message"] == "unknown tool 'm_x__pid'"
        assert await pid(console, "pid", "/mcp/m.x") != await pid(console, "pid", "/mcp/m_x")
        # Both list secret://vault and the template secret://{name}: neither is read at /mcp.
        resources = payload(await mcp(console, "resources/list", who="dev"))["result"]["resources"]
        assert "secret://vault" not in [resource["uri"] for resource in resources]
        for uri in ("secret://vault", "secret://other"):
            headers = {"Mcp-Name": uri}
            read = payload(
                await mcp(console, "resources/read", {"uri": uri}, who="dev", extra_headers=headers)
            )
            assert (
                read["error"]["message"]
                == f"more than one server here lists {uri!r}: ask one of them at /mcp/<server>"
            )
        assert "pid" in tool_names(await mcp(console, "tools/list", who="dev", path="/mcp/console"))
