"""The official conformance suite in server mode against `/mcp/<server>`, fronting our everything-style test
server (tests/servers/everything_server.py): every scenario the server passes on its own must pass
through the gateway too, on 2026-07-28 and on 2025-11-25.

The suite cannot send a bearer token, so it reaches the gateway through a loopback proxy that adds dev's
(tests/conformance/bearer_proxy.py), as an agent's MCP configuration would. dev may answer the test
server's questions alone (the team's default policy), so they go back to the suite's client.

The console polls every held 2025-11-25 response stream at once (CONSOLE_GATEWAY_POLL_SECONDS=0): the
suite's `server-sse-polling` wants the stream closed in the middle of a call that takes 0.1 s, and every
other 2025-11-25 scenario then passes with its streams closed and resumed with Last-Event-ID.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conformance.bearer_proxy import bearer_proxy
from tests.conformance.suite import Outcome, Suite, install, run_server
from tests.harness import ServerSpec, seed
from tests.processes import console_process

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

SPEC_VERSIONS = ("2026-07-28", "2025-11-25")
# Scenarios the test server passes alone that the gateway does not pass yet, with the reason. A listed
# scenario that passes fails the test, so the list cannot go stale.
GATEWAY_GAPS: dict[str, dict[str, str]] = {"2026-07-28": {}, "2025-11-25": {}}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return install()


@pytest.fixture
async def gateway_url(everything: str, sqlite_template: Path, tmp_path: Path) -> AsyncIterator[str]:
    """`/mcp/everything` of a running console (SQLite: the suite tests the protocol, and the other
    gateway tests run on both databases), through the proxy that adds dev's token."""
    path = tmp_path / "console.db"
    shutil.copyfile(sqlite_template, path)
    database_url = f"sqlite+aiosqlite:///{path}"
    tokens = await seed(database_url, {"everything": ServerSpec(url=everything)})
    with console_process(database_url, tmp_path / "console.txt", CONSOLE_GATEWAY_POLL_SECONDS="0") as base:
        port = urlsplit(base).port
        assert port is not None
        with bearer_proxy(("127.0.0.1", port), tokens["dev"]) as proxy:
            yield f"http://127.0.0.1:{proxy}/mcp/everything"


def _short_of(alone: Outcome, through: Outcome, name: str) -> str:
    """What the scenario lacks through the gateway: each check that succeeded alone and not here."""
    missing = alone.succeeded(name) - through.succeeded(name)
    found = {str(c["id"]): c for c in through.scenario(name)}
    return "; ".join(
        f"{check}: {found[check]['status']} {found[check].get('errorMessage') or ''}".strip()
        if check in found
        else f"{check}: not run"
        for check in sorted(missing)
    )


@pytest.mark.timeout(1500)  # the first test may install Node 22 and the suite (npm, up to 300 s each)
@pytest.mark.parametrize("spec_version", SPEC_VERSIONS)
async def test_every_scenario_the_server_passes_alone_passes_through_the_gateway(
    suite: Suite, everything: str, gateway_url: str, tmp_path: Path, spec_version: str
) -> None:
    args = ("--suite", "all", "--spec-version", spec_version)
    alone = run_server(suite, tmp_path / "alone", everything, *args)
    assert len(alone.by_scenario) > 30, alone.output[-3000:]
    assert alone.passed() == set(alone.by_scenario), alone.failures()

    through = run_server(suite, tmp_path / "gateway", gateway_url, *args)
    # A scenario passes through the gateway when every check that succeeded alone succeeds here too
    # (a check that only warns, or is not reached, does not count).
    short = {name: _short_of(alone, through, name) for name in alone.by_scenario}
    short = {name: lacking for name, lacking in short.items() if lacking}
    gaps = GATEWAY_GAPS[spec_version]
    unexpected = {name: lacking for name, lacking in short.items() if name not in gaps}
    assert not unexpected, "\n".join(f"{name}: {lacking}" for name, lacking in sorted(unexpected.items()))
    assert set(short) == set(gaps), f"listed, but now passing: {sorted(set(gaps) - set(short))}"
