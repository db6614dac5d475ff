"""A call's result is bounded (CONSOLE_MAX_RESULT_BYTES): a result past the limit fails the call with an
error naming the limit, on the call and in the audit log, and nothing of it is kept."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.calls.models import Call
from tests.harness import BULKY, Console, ServerSpec, running_console

pytestmark = pytest.mark.anyio

SERVERS = {"bulky": ServerSpec(command=BULKY)}
LIMIT = 64 * 1024
NAMED = f"larger than CONSOLE_MAX_RESULT_BYTES ({LIMIT} bytes)"


async def stored(console: Console, call_id: str) -> Call:
    async with console.runtime.factory() as session:
        call: Call | None = await session.get(Call, call_id)
        assert call is not None
        return call


async def events_of(console: Console, call_id: str) -> list[AuditEvent]:
    async with console.runtime.factory() as session:
        found = await session.execute(
            select(AuditEvent).where(AuditEvent.call_id == call_id).order_by(AuditEvent.seq)
        )
        return list(found.scalars())


async def test_a_result_past_the_limit_fails_the_call_naming_the_limit_and_nothing_of_it_is_kept(
    database_url: str,
) -> None:
    async with running_console(database_url, SERVERS, max_result_bytes=LIMIT) as console:
        failed = await console.call("bulky", "bulky", {"size": 3 * LIMIT})
        assert failed["status"] == "failed", failed
        assert NAMED in failed["error"]["message"]
        assert failed.get("result") is None
        row = await stored(console, failed["id"])
        events = await events_of(console, failed["id"])
        after = await console.call("bulky", "bulky", {"size": 10})
    assert row.result_json is None
    [ended] = [json.loads(e.payload_json) for e in events if e.action == "call_failed"]
    assert NAMED in ended["error"]["message"]
    assert all(len(e.payload_json) < 2000 for e in events), [e.action for e in events]
    assert after["status"] == "completed", after


async def test_a_resume_whose_result_is_too_large_fails_and_is_not_restarted(database_url: str) -> None:
    """A result too large says nothing of the server's state: the call is not sent again from round 1."""
    async with running_console(database_url, SERVERS, max_result_bytes=LIMIT) as console:
        asked = await console.call("bulky", "bulky", {"size": 3 * LIMIT, "ask_first": True})
        assert asked["status"] == "awaiting_input", asked
        failed = await console.answer_and_settle(asked, "accept", {"ok": True}, who="dev")
        actions = [e.action for e in await events_of(console, asked["id"])]
    assert failed["status"] == "failed", failed
    assert NAMED in failed["error"]["message"]
    assert "state_rejected_restart" not in actions
    assert actions.count("request_sent") == 2
