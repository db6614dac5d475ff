"""An agent using the console's HTTP API, as an agent would: start calls, answer, wait for results."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from benchmarks import procs
from benchmarks.channels import three_channels
from benchmarks.setup import TEAM, database, seed

WAIT = 30.0


class ApiError(Exception):
    pass


@dataclass(frozen=True)
class RoundTrip:
    """One call → input_required → answer → resume → complete, with the answer's wall-clock times."""

    call_id: str
    answer_sent: float
    answer_returned: float


class Agent:
    def __init__(self, base_url: str, token: str, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = httpx.AsyncClient(
            transport=transport,
            base_url=f"{base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=WAIT + 30,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _json(self, response: httpx.Response, *ok: int) -> dict[str, Any]:
        if response.status_code not in ok:
            raise ApiError(
                f"{response.request.method} {response.request.url.path}: "
                f"{response.status_code} {response.text[:300]}"
            )
        body: dict[str, Any] = response.json()
        return body

    async def new_run(self, title: str = "bench") -> str:
        response = await self.http.post("/runs", json={"team": TEAM, "title": title, "agent": "bench"})
        return str((await self._json(response, 201))["id"])

    async def call(
        self, run_id: str, server: str, tool: str, arguments: dict[str, Any], wait: float = WAIT
    ) -> dict[str, Any]:
        body = {"server": server, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        response = await self.http.post(f"/runs/{run_id}/calls", params={"wait": wait}, json=body)
        return await self._json(response, 200, 202)

    async def answer(self, question_id: str, content: dict[str, Any]) -> None:
        response = await self.http.post(
            f"/elicitations/{question_id}/answer", json={"action": "accept", "content": content}
        )
        await self._json(response, 200)

    async def settle(self, call_id: str, after_round: int) -> dict[str, Any]:
        response = await self.http.get(f"/calls/{call_id}", params={"wait": WAIT, "after_round": after_round})
        return await self._json(response, 200, 202)

    async def park(self, run_id: str, server: str, tag: str) -> dict[str, Any]:
        """Start `ask` and return the call once its question waits."""
        call = await self.call(run_id, server, "ask", {"tag": tag})
        if call["status"] != "awaiting_input" or not call["pending"]:
            raise ApiError(f"expected a waiting question, got {call['status']}: {call.get('error')}")
        return call

    async def round_trip(self, run_id: str, server: str, tag: str) -> RoundTrip:
        call = await self.park(run_id, server, tag)
        sent = time.time()
        await self.answer(call["pending"][0]["id"], {"ok": True})
        returned = time.time()
        done = await self.settle(call["id"], after_round=call["round"])
        if done["status"] != "completed":
            raise ApiError(f"call ended {done['status']}: {done.get('error')}")
        return RoundTrip(call["id"], sent, returned)


@asynccontextmanager
async def console_with_agent(
    kind: str, work: Path, postgres_url: str, server_url: str, *, channels: bool = False, workers: int = 1
) -> AsyncIterator[tuple[Agent, procs.Proc]]:
    """A fresh database of `kind` with `server_url` registered as `bench`, `console serve` on it (from
    `workers` processes), and the agent's API client; with `channels`, the team notifies three channels,
    one of them down."""
    async with database(kind, work, postgres_url) as url, AsyncExitStack() as stack:
        token = await seed(url, {"bench": server_url})
        if channels:
            await stack.enter_async_context(three_channels(url, work, procs.SECRET_KEY))
        with procs.console(url, work, workers=workers) as console:
            agent = Agent(console.url, token)
            try:
                yield agent, console
            finally:
                await agent.aclose()
