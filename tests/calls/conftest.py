"""The everything test server for call tests: in memory (tests/memory.py), or over stdio (a process per test)
and Streamable HTTP (one per module) for the tests that guard those transports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import EVERYTHING, MEMORY_EVERYTHING, ServerSpec
from tests.processes import ServerProcess, start_http_server


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_http_server(EVERYTHING, {}, tmp_path_factory.mktemp("everything") / "stderr.txt") as server:
        yield server


@pytest.fixture(params=[pytest.param(kind, marks=pytest.mark.transport) for kind in ("stdio", "http")])
def everything(request: pytest.FixtureRequest) -> ServerSpec:
    if request.param == "stdio":
        return ServerSpec(command=EVERYTHING)
    http: ServerProcess = request.getfixturevalue("everything_http")
    return ServerSpec(url=http.url)


@pytest.fixture
def everything_memory() -> ServerSpec:
    """The everything test server in the console's own event loop, a server of its own per connection."""
    return ServerSpec(command=MEMORY_EVERYTHING)
