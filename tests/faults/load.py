"""A bounded load on a console over HTTP, as agents and an approver make it, that rides out faults.

Each agent starts one `signed` call of the MRTR test server at a time (its item names the agent and the
call) and waits for it to end; the approver accepts every pending question it is shown. A request the
console cannot serve now (a 5xx, a dropped or refused connection: its database is away) is sent again,
with the same `Idempotency-Key` where it creates something, so a retry never starts a second call or
gives a second answer. Every wait is bounded by the caller's scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.harness import TEAM
from tests.processes import read_log

RETRY_PAUSE = 0.2  # between tries of a request the console could not serve
POLL_SECONDS = 5  # how long one long-poll of a call waits
UNFINISHED = ("running", "resuming", "awaiting_input")


async def retried(send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    """The first response that is no server error, trying again after a 5xx or a failed connection."""
    while True:
        try:
            response = await send()
        except httpx.TransportError:
            pass
        else:
            if response.status_code < 500:
                return response
        await anyio.sleep(RETRY_PAUSE)


@dataclass
class Load:
    http: httpx.AsyncClient
    tokens: dict[str, str]
    calls: dict[str, str] = field(default_factory=dict)  # item -> call id
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)  # item -> the call as it ended
    started_at: dict[str, float] = field(default_factory=dict)  # item -> when its agent first sent it
    completed: anyio.Event = field(default_factory=anyio.Event)  # set at each completed call, then renewed
    agents_stopped: anyio.Event = field(default_factory=anyio.Event)  # once every agent started stopped
    _agents: int = 0

    def _auth(self, who: str, key: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return headers if key is None else {**headers, "Idempotency-Key": key}

    async def agent(self, name: str, stop: anyio.Event) -> None:
        """Calls one after another until `stop` is set (the call under way is seen to its end)."""
        self._agents += 1
        try:
            await self._call_until(name, stop)
        finally:
            self._agents -= 1
            if self._agents == 0:
                self.agents_stopped.set()

    async def _call_until(self, name: str, stop: anyio.Event) -> None:
        body = {"team": TEAM, "title": f"agent {name}", "agent": "load"}
        made = await retried(
            lambda: self.http.post("/api/v1/runs", json=body, headers=self._auth("dev", f"run-{name}"))
        )
        assert made.status_code == 201, made.text
        run_id = made.json()["id"]
        number = 0
        while not stop.is_set():
            item = f"{name}-{number}"
            self.started_at[item] = anyio.current_time()
            call = {
                "server": "mrtr",
                "method": "tools/call",
                "params": {"name": "signed", "arguments": {"item": item}},
            }
            started = await retried(
                partial(
                    self.http.post,
                    f"/api/v1/runs/{run_id}/calls",
                    params={"wait": 0},
                    json=call,
                    headers=self._auth("dev", f"call-{item}"),
                )
            )
            assert started.status_code in (200, 202), started.text
            self.calls[item] = started.json()["id"]
            self.ended[item] = await self.until_ended(self.calls[item])
            if self.ended[item]["status"] == "completed":
                self.completed.set()
                self.completed = anyio.Event()
            number += 1

    async def until_ended(self, call_id: str) -> dict[str, Any]:
        while True:
            response = await retried(
                lambda: self.http.get(
                    f"/api/v1/calls/{call_id}", params={"wait": POLL_SECONDS}, headers=self._auth("dev")
                )
            )
            assert response.status_code in (200, 202), response.text
            call: dict[str, Any] = response.json()
            if call["status"] not in UNFINISHED:
                return call

    async def approver(self) -> None:
        """Accepts every pending question, until cancelled."""
        while True:
            listed = await retried(
                lambda: self.http.get(
                    "/api/v1/elicitations", params={"status": "pending"}, headers=self._auth("lead")
                )
            )
            assert listed.status_code == 200, listed.text
            for question in listed.json()["items"]:
                await self._accept(question["id"])
            if not listed.json()["items"]:
                await anyio.sleep(RETRY_PAUSE)  # polling: the inbox offers no long-poll

    async def _accept(self, question_id: str) -> None:
        body = {"action": "accept", "content": {"ok": True}}
        answered = await retried(
            lambda: self.http.post(
                f"/api/v1/elicitations/{question_id}/answer",
                json=body,
                headers=self._auth("lead", f"answer-{question_id}"),
            )
        )
        # 409: decided meanwhile (its call was interrupted, say); the agent sees how its call ended
        assert answered.status_code in (200, 409), answered.text

    def ended_after(self, moment: float) -> list[dict[str, Any]]:
        """The calls that ended and whose agent first sent them after `moment` (anyio's clock)."""
        return [call for item, call in self.ended.items() if self.started_at[item] > moment]

    async def completions(self, count: int) -> None:
        """Returns once `count` more calls completed."""
        for _ in range(count):
            await self.completed.wait()


def sends_of(log: Path, item: str) -> tuple[int, int]:
    """How many first sends, and how many resumes (with the answers), of the item's call the MCP server
    received."""
    received = [r for r in read_log(log) if r["name"] == "signed" and r["arguments"] == {"item": item}]
    resumes = [r for r in received if r["input_responses"] is not None]
    return len(received) - len(resumes), len(resumes)


def check_each_call(load: Load, log: Path) -> None:
    """Every call ended, and was sent at most once and resumed at most once: a completed call exactly
    once each, with the approver's answer; an interrupted one only after its request went out (the
    server received it), since only then may the outcome be unknown."""
    statuses = {item: call["status"] for item, call in load.ended.items()}
    assert set(statuses.values()) <= {"completed", "interrupted"}, statuses
    for item, call in load.ended.items():
        sends = sends_of(log, item)
        if call["status"] == "completed":
            assert sends == (1, 1), (item, sends)
            assert call["result"]["content"][0]["text"] == f"signed {item} ok=True"
            continue
        assert "outcome is unknown" in call["error"]["message"], call
        # Interrupted at its first send (no round asked yet) or at its resume.
        assert sends == ((1, 1) if call["round"] else (1, 0)), (item, call["round"], sends)
