"""What one user's gateway session, event, task and call ids are worth to anyone else: another user of
the same team, an auditor, another team's token each get a refusal or nothing of the other's. Task ids
are tried in test_tasks.py (`test_nobody_else_sees_or_steers_a_task_and_tasks_need_the_extension`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.calls.models import Call, Run
from console.transactions import transaction
from tests.gateway.agents import mcp, payload
from tests.harness import WAIT, Console, Mrtr, running_console, stdio_deployer, user_id
from tests.site import Site

pytestmark = pytest.mark.anyio

LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
OTHERS = ("lead", "viewer", "outsider")  # another user of the team, an auditor, another team


@pytest.fixture
async def console(database_url: str, mrtr_stdio: Mrtr, state_key: str) -> AsyncIterator[Console]:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": mrtr_stdio.spec}
    async with running_console(database_url, servers) as running:
        yield running


@dataclass
class Event:
    id: str
    message: dict[str, Any] | None  # None: a priming event


def events(text: str) -> list[Event]:
    """The events of an SSE body that carry an id."""
    found: list[Event] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        fields = [line.partition(":")[::2] for line in block.splitlines()]
        event_id = next((value.strip() for name, value in fields if name == "id"), None)
        data = "".join(value.strip() for name, value in fields if name == "data")
        if event_id is not None:
            found.append(Event(event_id, json.loads(data) if data else None))
    return found


@dataclass
class LegacySession:
    """A 2025-11-25 session opened over plain HTTP, as its client sends requests."""

    http: httpx.AsyncClient
    headers: dict[str, str]

    @property
    def id(self) -> str:
        return self.headers["Mcp-Session-Id"]

    async def request(self, request_id: int, method: str, params: dict[str, Any]) -> list[Event]:
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        response = await self.http.post("/mcp", json=body, headers={**self.headers, "Accept": ACCEPT})
        assert response.status_code == 200, response.text
        return events(response.text)


async def open_session(http: httpx.AsyncClient, auth: dict[str, str]) -> LegacySession:
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    opened = await http.post("/mcp", json=body, headers={**auth, "Accept": ACCEPT})
    assert opened.status_code == 200, opened.text
    headers = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (
        await http.post("/mcp", json=initialized, headers={**headers, "Accept": ACCEPT})
    ).status_code == 202
    return LegacySession(http, headers)


def complete_now(x: str) -> dict[str, Any]:
    return {"name": "mrtr__complete_now", "arguments": {"x": x}}


async def replayed(session: LegacySession, last_event_id: str) -> list[dict[str, Any]]:
    """What a GET with `Last-Event-ID` replays on the session: its first message, or nothing once the
    stream ends (a replayed stream then stays open for what comes next, so one message is enough)."""
    headers = {**session.headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
    with anyio.fail_after(WAIT):
        async with session.http.stream("GET", "/mcp", headers=headers) as response:
            assert response.status_code == 200, await response.aread()
            async for line in response.aiter_lines():
                data = line.removeprefix("data:").strip() if line.startswith("data:") else ""
                if data:
                    return [json.loads(data)]
    return []


async def test_a_last_event_id_replays_only_its_own_sessions_events_to_anyone_else_nothing(
    site: Site,
) -> None:
    async with httpx.AsyncClient(base_url=site.base, timeout=WAIT) as http:
        devs = await open_session(http, site.auth("dev"))
        priming, *_, answered = await devs.request(1, "tools/call", complete_now("team-secret"))
        assert priming.message is None
        assert answered.message is not None
        assert answered.message["result"]["content"][0]["text"] == "hello team-secret"
        assert [m["result"]["content"][0]["text"] for m in await replayed(devs, priming.id)] == [
            "hello team-secret"
        ]
        # dev's second session, another user of the team, an auditor, another team: each opens a
        # session of their own with a request of the same JSON-RPC id, then names dev's event.
        for who in ("dev", *OTHERS):
            theirs = await open_session(http, site.auth(who))
            own = await theirs.request(1, "tools/list", {})
            assert own[0].id.split(".")[0] != priming.id.split(".")[0]  # ids tell nothing of dev's
            for foreign in (priming.id, answered.id, "1", "no-such-event"):
                assert await replayed(theirs, foreign) == [], (who, foreign)


async def test_a_sessions_id_is_refused_to_another_user_an_auditor_and_another_team(
    console: Console,
) -> None:
    devs = await open_session(console.client, console.auth("dev"))
    assert (await devs.request(1, "tools/list", {}))[-1].message is not None
    for who in OTHERS:
        borrowed = {**devs.headers, **console.auth(who)}
        listed = await console.client.post(
            "/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
            headers={**borrowed, "Accept": ACCEPT},
        )
        assert listed.status_code == 404, (who, listed.text)
        resumed = await console.client.get(
            "/mcp", headers={**borrowed, "Accept": "text/event-stream", "Last-Event-ID": "1"}
        )
        assert resumed.status_code == 404, (who, resumed.text)
        assert "deploy" not in listed.text + resumed.text


async def test_console_await_follows_only_the_callers_own_call_and_others_are_recorded(
    console: Console,
) -> None:
    call = await console.call("mrtr", "complete_now", {"x": "team-secret"})
    awaited = {"name": "console__await", "arguments": {"call_id": call["id"]}}
    mine = payload(await mcp(console, "tools/call", awaited, who="dev"))
    assert mine["result"]["content"][0]["text"] == "hello team-secret"
    for who in OTHERS:
        refused = await mcp(console, "tools/call", awaited, who=who)
        assert payload(refused)["error"]["message"] == f"no call {call['id']!r}", (who, refused.text)
        assert "team-secret" not in refused.text
    async with transaction(console.runtime.factory) as session:
        query = select(AuditEvent).where(
            AuditEvent.action == "access_refused", AuditEvent.call_id == call["id"]
        )
        recorded = {
            (e.actor_id, json.loads(e.payload_json)["attempt"])
            for e in (await session.execute(query)).scalars()
        }
    assert recorded == {(await user_id(console, who), "await") for who in OTHERS}


async def test_a_session_id_another_user_sends_files_their_calls_under_a_run_of_their_own(
    console: Console,
) -> None:
    devs = await open_session(console.client, console.auth("dev"))
    lead_first = await mcp(
        console, "tools/call", complete_now("lead"), who="lead", extra_headers={"Mcp-Session-Id": devs.id}
    )
    assert payload(lead_first)["result"]["content"][0]["text"] == "hello lead"
    answered = (await devs.request(1, "tools/call", complete_now("dev")))[-1].message
    assert answered is not None
    assert answered["result"]["content"][0]["text"] == "hello dev", answered
    async with transaction(console.runtime.factory) as session:
        owners = await session.execute(
            select(Run.owner_id, Run.gateway_key).join(Call, Call.run_id == Run.id)
        )
        runs = set(owners.all())
    assert {owner for owner, _key in runs} == {await user_id(console, "dev"), await user_id(console, "lead")}
    assert len(runs) == 2  # a run each, under a key of its own
