"""An agent's roots change while the database is down: the console answers its notification 503 (never a
500), the server keeps the roots it had (it is told of no change the console could not keep), and once
the database is back the session's next call asks the agent's roots again, so the change reaches the
server then."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning

from tests.interop.filesystem import (
    agent_with_roots,
    allowed_at_gateway,
    filesystem_server,
    folders,
    server_said,
)
from tests.pgcluster import private_cluster
from tests.site import running_site

pytestmark = [pytest.mark.anyio, pytest.mark.faults, pytest.mark.slow]
APPLIED = "Updated allowed directories from MCP roots"  # what the server writes each time it is answered


@pytest.mark.timeout(300)
async def test_roots_that_change_while_the_database_is_down_reach_the_server_once_it_is_back(
    tmp_path: Path,
) -> None:
    start, first, second = folders(tmp_path, "start", "first", "second")
    log = tmp_path / "console.txt"
    roots = [first]
    with private_cluster() as cluster:
        async with (
            running_site(cluster.url(), {"files": filesystem_server(start)}, tmp_path) as site,
            agent_with_roots(site, "dev", roots) as dev,
        ):
            assert await allowed_at_gateway(dev, first) == f"Allowed directories:\n{first}"
            applied = (await anyio.Path(log).read_text(errors="replace")).count(APPLIED)

            await anyio.to_thread.run_sync(cluster.stop)
            roots[:] = [second]
            with warnings.catch_warnings():  # deprecated as of 2026-07-28; a 2025-11-25 session says it
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await dev.send_roots_list_changed()
            await server_said(log, "answered 503 to the gateway")
            assert (await anyio.Path(log).read_text(errors="replace")).count(APPLIED) == applied

            await anyio.to_thread.run_sync(cluster.start)
            assert await allowed_at_gateway(dev, second) == f"Allowed directories:\n{second}"
