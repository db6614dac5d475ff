"""A console restart while an agent's request is held loses only that open HTTP request: the call and its
question are rows, a person still decides, and `console__await` on the restarted console gets the result."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.gateway.agents import DEPLOY, Heard
from tests.harness import WAIT, Mrtr, seed, stdio_deployer
from tests.processes import console_process

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_a_restart_while_a_request_is_held_loses_neither_the_call_nor_its_question(
    database_url: str, tmp_path: Path, mrtr_stdio: Mrtr, state_key: str
) -> None:
    tokens = await seed(database_url, {"deployer": stdio_deployer(state_key), "mrtr": mrtr_stdio.spec})
    auth = {"Authorization": f"Bearer {tokens['dev']}"}
    heard = Heard()
    lost = anyio.Event()

    async def held_agent(console: str) -> None:
        http = httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(30, read=WAIT * 3))
        try:
            async with http, Client(streamable_http_client(f"{console}/mcp", http_client=http)) as agent:
                await agent.call_tool("deployer__deploy", DEPLOY, progress_callback=heard.progress)
        except Exception:  # the console dies under the held request: whatever the transport raises
            lost.set()

    async with anyio.create_task_group() as tg:
        with console_process(database_url, tmp_path / "console.txt") as first:
            tg.start_soon(held_agent, first)
            question_id = await heard.question_id()
        with anyio.fail_after(WAIT):  # killed (SIGKILL) while the request was held
            await lost.wait()
    with console_process(database_url, tmp_path / "console.txt") as second:
        async with httpx.AsyncClient(base_url=second, timeout=60) as api:
            lead = {"Authorization": f"Bearer {tokens['lead']}"}
            question = (await api.get(f"/api/v1/elicitations/{question_id}", headers=lead)).json()
            assert question["status"] == "pending"
            body = {"action": "accept", "content": {"environment": "production", "confirm": True}}
            answered = await api.post(f"/api/v1/elicitations/{question_id}/answer", json=body, headers=lead)
            assert answered.status_code == 200, answered.text
        http = httpx2.AsyncClient(headers=auth, timeout=httpx2.Timeout(30, read=WAIT * 3))
        async with http, Client(streamable_http_client(f"{second}/mcp", http_client=http)) as agent:
            result = await agent.call_tool("console__await", {"call_id": question["call_id"]})
    assert not result.is_error
    assert result.content[0].text == "auth-service 2.4.1 is being deployed to production."  # type: ignore[union-attr]
