"""Multi-round calls through the console: several rounds, state-only rounds, two questions in one round,
and prompts and resources that ask before they answer (the MRTR test server: the walk of two rounds, a
prompt and a resource over stdio and HTTP, the rest in memory)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.harness import Console, Mrtr, result_text, running_console
from tests.processes import read_log, requests_with

pytestmark = pytest.mark.anyio


async def pending_for(console: Console, call_id: str, who: str) -> list[dict[str, Any]]:
    """The pending questions of one call as `who` sees them in the question list."""
    return [q for q in await console.pending_questions(who) if q["call_id"] == call_id]


async def test_two_rounds_complete_after_two_answers_asked_one_after_the_other(
    database_url: str, mrtr: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": topic})
        assert call["status"] == "awaiting_input"
        assert call["round"] == 1
        assert [(p["key"], p["mode"], p["message"]) for p in call["pending"]] == [
            ("first", "form", f"About {topic}: what is your name?")
        ]
        listed = await pending_for(console, call["id"], "lead")
        assert [q["key"] for q in listed] == ["first"]  # the second question does not exist yet

        second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
        assert second["status"] == "awaiting_input"
        assert second["round"] == 2
        assert [(p["key"], p["message"]) for p in second["pending"]] == [
            ("second", f"Thanks Ada. How much and how many for {topic}?")
        ]
        assert [q["key"] for q in await pending_for(console, call["id"], "lead")] == ["second"]
        first = await console.question(call["pending"][0]["id"])
        assert (first["status"], first["content"], first["decided_by"]) == (
            "accepted",
            {"name": "Ada"},
            "lead",
        )

        done = await console.answer_and_settle(second, "accept", {"amount": 12.5, "count": 3})
        assert result_text(done) == "Ada 12.5 3"
        assert done["round"] == 2
        assert done["pending"] == []
        assert await pending_for(console, call["id"], "lead") == []

    sent = requests_with(mrtr.log, "topic", topic)
    assert [r["request_state"] for r in sent] == [None, "r1", "r2:Ada"]
    # Each resume carries the answers of its own round only.
    assert [r["input_responses"] for r in sent] == [
        None,
        {"first": {"action": "accept", "content": {"name": "Ada"}}},
        {"second": {"action": "accept", "content": {"amount": 12.5, "count": 3}}},
    ]


async def test_declining_the_first_question_stops_the_tool(database_url: str, mrtr_memory: Mrtr) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": topic})
        done = await console.answer_and_settle(call, "decline")
        assert result_text(done) == "stopped at first: decline"
        assert done["round"] == 1
        assert done["pending"] == []
    sent = requests_with(mrtr_memory.log, "topic", topic)
    assert [r["input_responses"] for r in sent] == [None, {"first": {"action": "decline"}}]


async def test_state_only_rounds_complete_without_anyone_answering(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    tag = secrets.token_hex(6)  # not part of the tool's schema; only marks our requests in a shared log
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        done = await console.call("mrtr", "state_only", {"n": 3, "tag": tag})
        assert result_text(done) == "done after 3 state-only rounds"
        assert done["pending"] == []
        assert await pending_for(console, done["id"], "lead") == []
        assert await pending_for(console, done["id"], "dev") == []

    sent = requests_with(mrtr_memory.log, "tag", tag)
    assert [r["request_state"] for r in sent] == [None, "s1", "s2", "s3"]
    assert [r["has_request_state"] for r in sent] == [False, True, True, True]
    # Nobody answered anything, so no retry carries inputResponses.
    assert [r["input_responses"] for r in sent] == [None, None, None, None]
    assert len({r["request_id"] for r in sent}) == 4


async def test_a_form_and_a_url_question_in_one_round_both_need_an_answer(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    tag = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "form_and_url", {"tag": tag})
        assert call["status"] == "awaiting_input"
        pending = {p["key"]: p for p in call["pending"]}
        assert {k: (p["mode"], p["message"]) for k, p in pending.items()} == {
            "approve": ("form", "Approve the example action?"),
            "connect": ("url", "Connect your example account"),
        }
        connect = await console.question(pending["connect"]["id"], who="dev")
        assert connect["url"] == "https://connect.example.com/start?flow=abc"

        answered = await console.answer(pending["approve"]["id"], "accept", {"ok": True}, who="lead")
        assert answered.status_code == 200, answered.text
        waiting = await console.get_call(call["id"])
        assert waiting["status"] == "awaiting_input"
        assert [p["key"] for p in waiting["pending"]] == ["connect"]
        assert len(requests_with(mrtr_memory.log, "tag", tag)) == 1  # nothing resumed yet

        done = await console.answer_and_settle(waiting, "accept", who="dev", key="connect")
        assert result_text(done) == "approve=accept ok=True connect=accept"
        assert done["round"] == 1

    sent = requests_with(mrtr_memory.log, "tag", tag)
    assert [r["input_responses"] for r in sent] == [
        None,
        {"approve": {"action": "accept", "content": {"ok": True}}, "connect": {"action": "accept"}},
    ]


async def test_only_the_calls_owner_can_answer_a_url_question(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "form_and_url", {})
        connect_id = next(p["id"] for p in call["pending"] if p["key"] == "connect")

        refused = await console.answer(connect_id, "accept", who="lead")
        assert refused.status_code == 403, refused.text
        assert "URL question" in refused.json()["error"]["message"]
        assert (await console.question(connect_id, who="dev"))["status"] == "pending"
        assert [q["key"] for q in await pending_for(console, call["id"], "lead")] == ["approve"]

        accepted = await console.answer(connect_id, "accept", who="dev")
        assert accepted.status_code == 200, accepted.text
        assert (accepted.json()["status"], accepted.json()["decided_by"]) == ("accepted", "dev")
        done = await console.answer_and_settle(
            await console.get_call(call["id"]), "decline", who="lead", key="approve"
        )
        assert result_text(done) == "approve=decline ok=None connect=accept"


async def test_a_prompt_asks_for_the_tone_and_then_returns_its_messages(
    database_url: str, mrtr: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    params = {"name": "review_prompt", "arguments": {"topic": topic}}
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        call = await console.request("mrtr", "prompts/get", params)
        assert call["status"] == "awaiting_input", call
        assert call["method"] == "prompts/get"
        assert [(p["key"], p["message"]) for p in call["pending"]] == [("tone", f"Which tone for {topic}?")]
        tone = await console.question(call["pending"][0]["id"])
        assert tone["requested_schema"]["properties"]["tone"]["enum"] == ["formal", "casual"]

        done = await console.answer_and_settle(call, "accept", {"tone": "formal"})
        assert done["status"] == "completed"
        messages = done["result"]["messages"]
        assert [(m["role"], m["content"]["type"], m["content"]["text"]) for m in messages] == [
            ("user", "text", f"Write about {topic} in a formal tone.")
        ]
    sent = requests_with(mrtr.log, "topic", topic)
    assert [(r["method"], r["name"]) for r in sent] == [("prompts/get", "review_prompt")] * 2


async def test_a_resource_asks_for_a_reason_and_then_returns_its_contents(
    database_url: str, mrtr: Mrtr
) -> None:
    reason = f"audit {secrets.token_hex(4)}"
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        call = await console.request("mrtr", "resources/read", {"uri": "secret://vault"})
        assert call["status"] == "awaiting_input", call
        assert [(p["key"], p["message"]) for p in call["pending"]] == [
            ("reason", "Why do you need secret://vault?")
        ]

        done = await console.answer_and_settle(call, "accept", {"reason": reason})
        assert done["status"] == "completed"
        [contents] = done["result"]["contents"]
        assert contents["uri"] == "secret://vault"
        assert contents["text"] == f"secret for {reason}"
    answered = [
        r
        for r in read_log(mrtr.log)
        if r["method"] == "resources/read"
        and (r["input_responses"] or {}).get("reason", {}).get("content") == {"reason": reason}
    ]
    assert len(answered) == 1
    assert answered[0]["request_state"] == "secret:reason"
