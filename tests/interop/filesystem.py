"""`@modelcontextprotocol/server-filesystem` (npm) as the console reaches it, and an agent of the gateway
that lists roots of its own, for the tests of roots."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ListRootsResult, Root

from tests.harness import WAIT, ServerSpec
from tests.interop.foreign import node_tools
from tests.site import Site

TOOL = "list_allowed_directories"
SETTLE_SECONDS = 30.0  # starting the server and applying the roots it was answered, on a loaded machine


def folders(tmp_path: Path, *names: str) -> list[Path]:
    made = [(tmp_path / name).resolve() for name in names]
    for folder in made:
        folder.mkdir()
    return made


def filesystem_server(start: Path) -> ServerSpec:
    """The server as an admin registers it, allowed `start` on its command line."""
    return ServerSpec(command=[*node_tools().bin("mcp-server-filesystem"), str(start)])


def processes_started_with(argument: Path) -> int:
    """How many processes of this machine run with `argument` on their command line."""
    wanted = str(argument).encode()
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if wanted in cmdline.read_bytes().split(b"\0"):
                count += 1
        except OSError:
            continue  # ended meanwhile
    return count


@asynccontextmanager
async def agent_with_roots(
    site: Site,
    who: str,
    roots: list[Path],
    asked: list[ClientRequestContext] | None = None,
    session_ids: list[str] | None = None,
) -> AsyncIterator[Client]:
    """`who`'s agent at /mcp (the in-repo mcp 2.3 client, a 2025-11-25 session), listing `roots` as its
    own: the list is read on each ask, so a test changes it in place. Its session's id goes in
    `session_ids` once the gateway gave it."""

    async def note_session(response: httpx2.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_ids is not None and session_id and session_id not in session_ids:
            session_ids.append(session_id)

    async def listed(context: ClientRequestContext) -> ListRootsResult:
        if asked is not None:
            asked.append(context)
        return ListRootsResult(roots=[Root.model_validate({"uri": folder.as_uri()}) for folder in roots])

    http = httpx2.AsyncClient(
        headers=site.auth(who),
        timeout=httpx2.Timeout(30, read=WAIT * 3),
        event_hooks={"response": [note_session]},
    )
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, list_roots_callback=listed, mode="legacy") as client:
        yield client


async def allowed_at_gateway(client: Client, folder: Path) -> str:
    """What the server reports it may work in, asked through the gateway until `folder` is among them."""
    with anyio.fail_after(SETTLE_SECONDS):
        while True:
            result = await client.call_tool(f"files__{TOOL}", {})
            text = "".join(part.text for part in result.content if part.type == "text")
            if str(folder) in text.splitlines():
                return text


async def processes_become(argument: Path, count: int) -> None:
    """Wait, bounded, until `count` processes run with `argument` on their command line."""
    with anyio.fail_after(SETTLE_SECONDS):
        while True:
            if processes_started_with(argument) == count:
                return
            await anyio.sleep(0.05)  # a process's end is told to no one here: /proc is looked at again


async def server_said(log: Path, *lines: str) -> str:
    """The first of `lines` written to the console's output (in `log`, with its servers' stderr), bounded."""
    with anyio.fail_after(SETTLE_SECONDS):
        while True:
            text = await anyio.Path(log).read_text(errors="replace")
            found = [line for line in lines if line in text]
            if found:
                return found[0]
            await anyio.sleep(0.05)  # a file's growth is told to no one: it is read again
