"""What every gateway test shares: the gateway in front of the demo deployer and the MRTR test server, or
in front of the everything test server, and what an agent hears while its call waits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.harness import EVERYTHING, WAIT, Console, Mrtr, ServerSpec, running_console, stdio_deployer
from tests.processes import start_http_server
from tests.site import Site, running_site


@asynccontextmanager
async def gateway_site(
    database_url: str, tmp_path: Path, mrtr: Mrtr, state_key: str, *, hold: float, **env: str
) -> AsyncIterator[Site]:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": mrtr.spec}
    settings = {"CONSOLE_GATEWAY_HOLD_SECONDS": str(hold), **env}
    async with running_site(database_url, servers, tmp_path, **settings) as site:
        yield site


@pytest.fixture
async def site(database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str) -> AsyncIterator[Site]:
    """The gateway holding requests long enough for any person in these tests to decide."""
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=WAIT * 2) as running:
        yield running


@pytest.fixture
async def impatient_site(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str
) -> AsyncIterator[Site]:
    """The gateway holding a request 1 s at most: every question outlasts the hold."""
    async with gateway_site(database_url, tmp_path, mrtr_stdio, state_key, hold=1) as running:
        yield running


@pytest.fixture(scope="module")
def everything(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The MCP URL of the everything test server (the conformance suite's tools, prompts and resources)."""
    with start_http_server(EVERYTHING, {}, tmp_path_factory.mktemp("everything") / "server.txt") as server:
        yield server.url


@pytest.fixture
async def everything_console(database_url: str, everything: str) -> AsyncIterator[Console]:
    """The gateway in front of the everything test server, registered as `everything`."""
    async with running_console(database_url, {"everything": ServerSpec(url=everything)}) as running:
        yield running
