"""Sampling requests answered by people: declared only where the team's policy allows it; the person's
reply goes back as the model's answer (model "human"); a declined, cancelled or expired one abandons the
call; a round that also asks a form and roots completes with all of them (the everything test server over
stdio and HTTP)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from console.db import utcnow
from console.elicitations.decisions import expire_due
from console.mcp.admin_roots import set_roots
from console.mcp.roots import Root
from console.transactions import transaction
from tests.harness import TEAM, Console, Mrtr, ServerSpec, result_text, running_console
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio
SAMPLING_TOOL = "test_input_required_result_sampling"


async def allow_sampling(console: Console, **values: Any) -> None:
    await set_policy(console, "server", server="everything", sampling=True, **values)


async def test_a_sampling_request_is_written_by_a_person_only_where_the_policy_allows_it(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        unoffered = await console.call("everything", SAMPLING_TOOL, {})
        assert unoffered["status"] == "failed", unoffered
        assert unoffered["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}, unoffered

        await allow_sampling(console)
        call = await console.call("everything", SAMPLING_TOOL, {})
        assert call["status"] == "awaiting_input", call
        [pending] = call["pending"]
        assert (pending["key"], pending["mode"]) == ("capital_question", "sampling")
        assert pending["message"] == "Write the model's reply to: What is the capital of France?"
        question = await console.question(pending["id"])
        assert question["mode"] == "sampling"

        empty = await console.answer(pending["id"], "accept", {"reply": ""})
        assert empty.status_code == 422, empty.text
        assert "reply" in json.dumps(empty.json()), empty.text
        done = await console.answer_and_settle(call, "accept", {"reply": "Paris, of course."})
        assert result_text(done) == "Model said: Paris, of course."
        [answered] = await console.audit_payloads("question_answered")
        assert answered["content"] == {"reply": "Paris, of course."}


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_cancelled_sampling_request_abandons_the_call_and_sends_nothing(
    database_url: str, everything: ServerSpec, action: str
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        await allow_sampling(console)
        call = await console.call("everything", SAMPLING_TOOL, {})
        ended = await console.answer_and_settle(call, action)
        assert ended["status"] == "abandoned", ended
        verb = "declined" if action == "decline" else "cancelled"
        assert ended["error"]["message"] == (
            f"lead {verb} the server's sampling request; MCP has no reply that says no, so the call "
            "was abandoned"
        )
        assert ended["result"] is None
        assert await console.audit_payloads("resume_queued") == []  # nothing went back to the server


async def test_an_unanswered_sampling_request_abandons_the_call_when_it_expires(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        await allow_sampling(console, expiry_minutes=1)
        call = await console.call("everything", SAMPLING_TOOL, {})
        async with transaction(console.runtime.factory) as session:
            assert await expire_due(session=session, now=utcnow() + timedelta(minutes=2)) == [call["id"]]
        ended = await console.get_call(call["id"])
        assert ended["status"] == "abandoned", ended
        assert ended["error"]["message"].startswith(
            "nobody wrote the model's reply to the server's sampling request in time"
        )


async def test_a_round_asking_a_form_a_sampling_reply_and_roots_completes_with_all_three(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        await allow_sampling(console)
        async with console.runtime.factory() as session:
            await set_roots(
                session=session, by=None, team_name=TEAM, server_name=None, roots=[Root("file:///srv/app")]
            )
        call = await console.call("everything", "test_input_required_result_multiple_inputs", {})
        assert call["status"] == "awaiting_input", call
        modes = {p["key"]: p["mode"] for p in call["pending"]}
        assert modes == {"user_name": "form", "greeting": "sampling"}  # roots were answered already
        first = await console.answer(call["pending"][0]["id"], "accept", _answer(call["pending"][0]))
        assert first.status_code == 200, first.text
        done = await console.answer_and_settle(call, "accept", {"reply": "Hello there!"}, key="greeting")
        assert result_text(done) == "All inputs received: name=Ada, greeting=Hello there!, roots=1"


def _answer(pending: dict[str, Any]) -> dict[str, Any]:
    return {"name": "Ada"} if pending["mode"] == "form" else {"reply": "Hello there!"}


async def test_a_call_keeps_declaring_sampling_after_the_policy_changed_while_it_waits(
    database_url: str, mrtr: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        await set_policy(console, "server", server="mrtr", sampling=True)
        call = await console.call("mrtr", "sample", {"payload": "weather"})
        assert call["status"] == "awaiting_input", call
        await set_policy(console, "server", server="mrtr", sampling=False)  # for later calls
        done = await console.answer_and_settle(call, "accept", {"reply": "Sunny."})
        assert result_text(done) == "sampled role=assistant model=human stop=endTurn: Sunny."
        later = await console.call("mrtr", "sample", {"payload": "weather"})
        assert later["status"] == "failed", later  # sampling is not offered any more: a protocol error
