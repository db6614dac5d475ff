"""The MCP Inspector CLI 2.12 gives up on a request after 60 s, its SDK's default: the CLI takes no
`requestTimeout` (a catalog's is read by its web client only) and asks for no progress, so the gateway's
heartbeats cannot hold it. Speaking 2026-07-28 (`--protocol-era modern`), it declares the tasks
extension: a call that waits for a person becomes a task it polls with short requests, and it gets the
approver's answer however long they take. On 2025-11-25 (its default) it gives up in silence, and the
console withdraws the call once the agent did not come back (tests/gateway/test_left_calls.py)."""

from __future__ import annotations

import subprocess

import anyio
import pytest

from tests.gateway.test_withdrawals import STATE_WAIT, asked, gate, inspector
from tests.harness import WAIT, Mrtr
from tests.interop.foreign import node_tools
from tests.processes import requests_with
from tests.site import Site

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INSPECTOR_TIMEOUT = 60  # seconds: the request timeout of the Inspector CLI 2.12, which it cannot change


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # a minute of waiting: one database
async def test_an_inspector_speaking_2026_gets_an_answer_given_after_its_request_timeout(
    site: Site, mrtr_stdio: Mrtr
) -> None:
    x = await gate(site)
    ran: list[subprocess.CompletedProcess[bytes]] = []

    async def run() -> None:
        argv = inspector(site, x, "--protocol-era", "modern")
        ran.append(await anyio.run_process(argv, env=node_tools().env, check=False))

    with anyio.fail_after(STATE_WAIT + INSPECTOR_TIMEOUT + WAIT * 2):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            question = await asked(site)
            await anyio.sleep(INSPECTOR_TIMEOUT + 5)  # the time under test: past the Inspector's timeout
            assert not ran, "the Inspector ended before the approver answered"
            approved = await site.answer(question["id"], "accept", {"arguments": {"x": x}}, who="lead")
            assert approved.status_code == 200, approved.text
    out = ran[0].stdout.decode()
    assert ran[0].returncode == 0, out + ran[0].stderr.decode()
    assert f"hello {x}" in out
    assert len(requests_with(mrtr_stdio.log, "x", x)) == 1
