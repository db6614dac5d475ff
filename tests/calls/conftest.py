"""The everything test server for call tests, over stdio (a process per test) or Streamable HTTP (one per
module)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import EVERYTHING, ServerSpec
from tests.processes import ServerProcess, start_http_server


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with start_http_server(EVERYTHING, {}, tmp_path_factory.mktemp("everything") / "stderr.txt") as server:
        yield server


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> ServerSpec:
    if request.param == "stdio":
        return ServerSpec(command=EVERYTHING)
    http: ServerProcess = request.getfixturevalue("everything_http")
    return ServerSpec(url=http.url)
