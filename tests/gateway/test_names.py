"""Names at /mcp never go to whichever server listed them first: a name two servers' tools would share
(possible only for servers named before such names were refused), or a resource URI two servers list,
is withheld from both, and each server is still reached under its own path; the console's own names are
no server's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import update

from console.gateway.catalog import Catalog, Entry, Upstream
from console.mcp.endpoint import Endpoint
from console.mcp.models import McpServer
from tests.gateway.agents import mcp, payload
from tests.gateway.test_access import tool_names
from tests.harness import Console, ServerSpec, running_console, stdio_mrtr

pytestmark = pytest.mark.anyio


async def rename(console: Console, old: str, new: str) -> None:
    """Give a server a name refused today, as one registered before."""
    async with console.runtime.factory() as session:
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


async def uris(console: Console, method: str, path: str = "/mcp") -> list[str]:
    """The URIs (or URI templates) listed at `path`, in order, each as often as it is listed."""
    listed = payload(await mcp(console, method, who="dev", path=path))["result"]
    if method == "resources/list":
        return [resource["uri"] for resource in listed["resources"]]
    return [template["uriTemplate"] for template in listed["resourceTemplates"]]


async def test_a_template_two_servers_list_is_withheld_at_mcp_and_one_only_one_lists_is_read_there(
    database_url: str, tmp_path: Path, everything: str
) -> None:
    servers = {name: stdio_mrtr(tmp_path / f"{name}.jsonl") for name in ("left", "right")}
    servers["everything"] = ServerSpec(url=everything)
    async with running_console(database_url, servers) as console:
        # Both MRTR servers list secret://vault and the template secret://{name}; only the everything
        # server lists test://template/{id}/data, whose URIs no other template fits.
        assert await uris(console, "resources/templates/list") == ["test://template/{id}/data"]
        assert "secret://vault" not in await uris(console, "resources/list")
        for path in ("/mcp/left", "/mcp/right"):  # each server's own path lists what it lists
            assert await uris(console, "resources/templates/list", path) == ["secret://{name}"]
            assert await uris(console, "resources/list", path) == ["secret://vault"]

        uri = "test://template/123/data"
        headers = {"Mcp-Name": uri}
        read = payload(await mcp(console, "resources/read", {"uri": uri}, who="dev", extra_headers=headers))
        assert json.loads(read["result"]["contents"][0]["text"])["data"] == "Data for ID: 123"
        uri = "secret://report"
        headers = {"Mcp-Name": uri}
        refused = payload(
            await mcp(console, "resources/read", {"uri": uri}, who="dev", extra_headers=headers)
        )
        assert refused["error"]["message"] == (
            f"more than one server here lists {uri!r}: ask one of them at /mcp/<server>"
        )


def test_templates_are_withheld_at_mcp_exactly_when_a_uri_could_fit_two_servers_templates() -> None:
    catalog = Catalog(prefixed=True)
    listed = {
        "tables": "db://{table}",  # its URIs include every URI of users'
        "users": "db://users/{id}",
        "logs": "logs://{day}",  # no other server's template fits its URIs
        "mail": "mail://inbox/{id}",
    }
    for server, template in listed.items():
        catalog.templates.append(Entry(Upstream(server, Endpoint.stdio([server])), {"uriTemplate": template}))
    assert [t["uriTemplate"] for t in catalog.shown("resourceTemplates")] == [
        "logs://{day}",
        "mail://inbox/{id}",
    ]
    assert catalog.server_of_uri("db://users/7") is None
    assert catalog.unrouted("db://users/7").startswith("more than one server here lists")
    routed = {uri: catalog.server_of_uri(uri) for uri in ("logs://monday", "mail://inbox/3")}
    assert {uri: upstream and upstream.name for uri, upstream in routed.items()} == {
        "logs://monday": "logs",
        "mail://inbox/3": "mail",
    }
