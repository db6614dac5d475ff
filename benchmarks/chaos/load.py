"""The load: agents that start calls and wait for them to end, approvers that answer the questions.

Every agent request has its own id (`rid`, in the tool's arguments) and Idempotency-Key; an agent waits
(long-polls) until its call ends, then starts the next, until the load's time is up. Approvers list the
pending questions and answer their share of them (by question id), and now and then one of anybody's,
which races its owner (one of them gets 409): most accept, some decline.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchmarks.chaos.api import WAIT, Api, LostForGood, Tally
from benchmarks.chaos.server import TOOL

SERVER = "chaos"
TEAM = "chaos"
TERMINAL = ("completed", "failed", "interrupted", "abandoned", "declined", "cancelled")
DECLINE_SHARE = 0.25
IDLE = 0.2  # seconds an approver waits when nothing is pending
MAX_WORK_MS = 400
RACE_SHARE = 0.3  # of listings after which an approver also answers a question of anybody's


@dataclass(frozen=True)
class Team:
    """The approvers, each of whom owns a share of the questions."""

    approvers: tuple[str, ...]

    def owner_of(self, question_id: str) -> str:
        return self.approvers[int(question_id[:8], 16) % len(self.approvers)]


@dataclass
class AgentRequest:
    rid: str
    rounds: int
    work_ms: int  # how long the server works on each of its requests
    call_id: str | None = None
    status: str | None = None  # as the agent last saw it
    gave_up: bool = False  # its responses were lost for good


@dataclass(frozen=True)
class Answer:
    """A decision an approver was told was taken (200)."""

    question_id: str
    call_id: str
    approver: str
    action: str
    content: dict[str, Any] | None


@dataclass
class Load:
    requests: list[AgentRequest] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    conflicts: int = 0  # answers refused because another approver had answered (409)
    refused: list[str] = field(default_factory=list)  # any other answer than the ones expected
    started: set[str] = field(default_factory=set)  # agents that ran
    finished: set[str] = field(default_factory=set)  # agents whose last wait ended
    tally: Tally = field(default_factory=Tally)


async def agent(api: Api, name: str, until: float, rng: random.Random, load: Load) -> None:
    """Start calls one after another until `until` (time.monotonic()), each waited for until it ends."""
    load.started.add(name)
    try:
        created = await api.send("POST", "/runs", body={"team": TEAM, "title": name}, key=f"run-{name}")
    except LostForGood:
        load.refused.append(f"{name}: POST /runs lost for good")
        return
    if created.status_code != 201:
        load.refused.append(f"{name}: POST /runs {created.status_code} {created.text[:200]}")
        return
    run_id = created.json()["id"]
    n = 0
    while time.monotonic() < until:
        request = AgentRequest(f"{name}-{n}", rng.choice((1, 2)), rng.randint(0, MAX_WORK_MS))
        load.requests.append(request)
        n += 1
        try:
            if not await _drive(api, run_id, request, load):
                return
        except LostForGood:
            request.gave_up = True
            return
    load.finished.add(name)


async def _drive(api: Api, run_id: str, request: AgentRequest, load: Load) -> bool:
    """Start the request's call and wait until it ends; False on an answer no agent should get."""
    arguments = {"rid": request.rid, "rounds": request.rounds, "work_ms": request.work_ms}
    body = {"server": SERVER, "method": "tools/call", "params": {"name": TOOL, "arguments": arguments}}
    path, params = f"/runs/{run_id}/calls", {"wait": WAIT}
    response = await api.send("POST", path, body=body, params=params, key=f"call-{request.rid}")
    while response.status_code in (200, 202):
        call = response.json()
        request.call_id, request.status = call["id"], call["status"]
        if call["status"] in TERMINAL:
            return True
        path, params = f"/calls/{call['id']}", {"wait": WAIT, "after_round": call["round"]}
        response = await api.send("GET", path, params=params)
    load.refused.append(f"{request.rid}: {path} {response.status_code} {response.text[:200]}")
    return False


async def approver(
    api: Api, name: str, team: Team, stop: anyio.Event, rng: random.Random, load: Load
) -> None:
    """Answer pending questions until `stop` is set: from each listing the ones that are this approver's
    (a share of the questions by their id), and now and then one of anybody's, which races its owner."""
    while not stop.is_set():
        try:
            listed = await api.send("GET", "/elicitations", params={"status": "pending", "limit": 100})
        except LostForGood:
            continue
        items = listed.json()["items"] if listed.status_code == 200 else []
        if listed.status_code != 200:
            load.refused.append(f"{name}: GET /elicitations {listed.status_code} {listed.text[:200]}")
        chosen = {q["id"]: q for q in items if team.owner_of(q["id"]) == name}
        if items and rng.random() < RACE_SHARE:
            raced = rng.choice(items)
            chosen[raced["id"]] = raced
        if not chosen:
            with anyio.move_on_after(IDLE):
                await stop.wait()
            continue
        for question in chosen.values():
            await _answer(api, name, question, rng, load)


async def _answer(api: Api, name: str, question: dict[str, Any], rng: random.Random, load: Load) -> None:
    action = "decline" if rng.random() < DECLINE_SHARE else "accept"
    content = {"ok": True, "by": name} if action == "accept" else None
    body: dict[str, Any] = {"action": action} | ({"content": content} if content else {})
    path = f"/elicitations/{question['id']}/answer"
    try:
        response = await api.send("POST", path, body=body, key=f"answer-{name}-{question['id']}")
    except LostForGood:
        load.refused.append(f"{name}: {path} lost for good")
        return
    if response.status_code == 200:
        load.answers.append(Answer(question["id"], question["call_id"], name, action, content))
    elif response.status_code == 409:
        load.conflicts += 1
    else:
        load.refused.append(f"{name}: {path} {response.status_code} {response.text[:200]}")
