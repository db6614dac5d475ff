"""What the console refuses, and how: bad answers, unknown things, oversized or reserved call bodies,
missing credentials, other teams, servers that break the protocol, endless rounds and legacy servers."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from sqlalchemy import select

from console.calls.models import Call
from tests.harness import (
    TEAM,
    Console,
    Mrtr,
    form_fields,
    html,
    one,
    result_text,
    running_console,
    signed_in,
)
from tests.processes import read_log, requests_with

pytestmark = pytest.mark.anyio


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, f"{response.status_code} {response.text[:2000]}"
    error: dict[str, Any] = response.json()["error"]
    return error


def content_for(schema: dict[str, Any]) -> dict[str, Any]:
    """An answer that fits a form schema: the first enum value, or a plain value of the field's type."""
    plain = {"string": "yes", "boolean": True, "integer": 1, "number": 1}
    return {
        name: field["enum"][0] if "enum" in field else plain[field["type"]]
        for name, field in schema["properties"].items()
    }


# --- answers ------------------------------------------------------------------------------


async def test_an_answer_that_breaks_the_form_is_refused_and_nothing_is_stored(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": topic})
        first_id = call["pending"][0]["id"]

        missing = error_of(await console.answer(first_id, "accept", {}), 422)
        assert "name" in missing["fields"]
        wrong_type = error_of(await console.answer(first_id, "accept", {"name": 7}), 422)
        assert "name" in wrong_type["fields"]
        stored = await console.question(first_id)
        assert (stored["status"], stored["content"], stored["decided_by"]) == ("pending", None, None)
        unchanged = await console.get_call(call["id"])
        assert (unchanged["status"], unchanged["round"]) == ("awaiting_input", 1)
        assert [p["id"] for p in unchanged["pending"]] == [first_id]
        assert len(requests_with(mrtr_memory.log, "topic", topic)) == 1  # no resume went out

        second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
        assert [p["key"] for p in second["pending"]] == ["second"]
        second_id = second["pending"][0]["id"]
        too_much = error_of(await console.answer(second_id, "accept", {"amount": 500, "count": 1}), 422)
        assert set(too_much["fields"]) == {"amount"}
        assert (await console.question(second_id))["status"] == "pending"
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"

        done = await console.answer_and_settle(second, "accept", {"amount": 50, "count": 1})
        assert result_text(done) == "Ada 50 1"
    assert len(requests_with(mrtr_memory.log, "topic", topic)) == 3


BAD_ANSWERS: list[tuple[dict[str, Any], str]] = [
    ({"action": "maybe"}, "action"),
    ({"action": "maybe", "content": {"name": "Ada"}}, "action"),
    ({}, "action"),
    ({"action": "accept", "content": ["Ada"]}, "content"),
    ({"action": "accept", "content": {"name": "Ada"}, "approved": True}, "approved"),
]


async def test_an_answer_body_that_is_not_an_answer_is_refused(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "x"})
        first_id = call["pending"][0]["id"]
        for body, field in BAD_ANSWERS:
            response = await console.client.post(
                f"/api/v1/elicitations/{first_id}/answer", json=body, headers=console.auth("lead")
            )
            error = error_of(response, 422)
            assert any(name.startswith(field) for name in error["fields"]), (body, error)
        assert (await console.question(first_id))["status"] == "pending"
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
    assert len(read_log(mrtr_memory.log)) == 1


async def test_a_url_question_is_accepted_without_content(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "form_and_url", {})
        connect_id = next(p["id"] for p in call["pending"] if p["key"] == "connect")
        error = error_of(await console.answer(connect_id, "accept", {"ok": True}, who="dev"), 422)
        assert "content" in error["fields"]
        assert (await console.question(connect_id, who="dev"))["status"] == "pending"


# --- unknown things -----------------------------------------------------------------------


async def test_a_call_to_an_unknown_server_or_tool_is_refused_with_404(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        no_server = await console.start("nowhere", "tools/call", {"name": "complete_now", "arguments": {}})
        assert "nowhere" in error_of(no_server, 404)["message"]
        no_tool = await console.start("mrtr", "tools/call", {"name": "no_such_tool", "arguments": {}})
        assert "no_such_tool" in error_of(no_tool, 404)["message"]
        known = await console.call("mrtr", "complete_now", {"x": "there"})
        assert result_text(known) == "hello there"
    assert [r["name"] for r in read_log(mrtr_memory.log)] == [
        "complete_now"
    ]  # the unknown tool was never sent


async def test_unknown_runs_calls_and_questions_are_404(database_url: str, mrtr_memory: Mrtr) -> None:
    missing = "0" * 32
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        headers = console.auth("dev")
        body = {"server": "mrtr", "method": "tools/call", "params": {"name": "complete_now"}}
        responses = {
            "run": await console.client.post(f"/api/v1/runs/{missing}/calls", json=body, headers=headers),
            "call": await console.client.get(f"/api/v1/calls/{missing}", headers=headers),
            "abandon": await console.client.post(f"/api/v1/calls/{missing}/abandon", headers=headers),
            "question": await console.client.get(f"/api/v1/elicitations/{missing}", headers=headers),
            "answer": await console.client.post(
                f"/api/v1/elicitations/{missing}/answer", json={"action": "decline"}, headers=headers
            ),
        }
    assert {what: r.status_code for what, r in responses.items()} == dict.fromkeys(responses, 404)
    assert all(r.json()["error"]["code"] == "not_found" for r in responses.values())


# --- call bodies --------------------------------------------------------------------------


async def _chunks(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 256):
        yield data[start : start + 256]


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
async def test_a_call_body_over_the_size_cap_is_refused_with_413(
    database_url: str, mrtr_memory: Mrtr, framing: str
) -> None:
    big = secrets.token_hex(600)  # 1200 characters: the body is over the 1000-byte cap
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, max_params_bytes=1000) as console:
        run_id = await console.new_run()
        body = json.dumps(
            {
                "server": "mrtr",
                "method": "tools/call",
                "params": {"name": "complete_now", "arguments": {"x": big}},
            }
        ).encode()
        headers = {**console.auth("dev"), "Content-Type": "application/json"}
        content: bytes | AsyncIterator[bytes] = body if framing == "content-length" else _chunks(body)
        response = await console.client.post(f"/api/v1/runs/{run_id}/calls", content=content, headers=headers)
        assert error_of(response, 413)["code"] == "payload_too_large"

        small = await console.call("mrtr", "complete_now", {"x": "small"}, run_id=run_id)
        assert result_text(small) == "hello small"
    assert [r["arguments"] for r in read_log(mrtr_memory.log)] == [{"x": "small"}]


@pytest.mark.parametrize("reserved", ["requestState", "_meta", "inputResponses"])
async def test_params_may_not_carry_what_the_console_sets(
    database_url: str, mrtr_memory: Mrtr, reserved: str
) -> None:
    values = {"requestState": "forged", "_meta": {"progressToken": 1}, "inputResponses": {"go": {}}}
    params = {"name": "complete_now", "arguments": {"x": "y"}, reserved: values[reserved]}
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        error = error_of(await console.start("mrtr", "tools/call", params), 422)
        assert f"params.{reserved}" in error["fields"]
        resource = {"uri": "secret://vault", reserved: values[reserved]}
        assert (
            f"params.{reserved}"
            in error_of(await console.start("mrtr", "resources/read", resource), 422)["fields"]
        )
    assert read_log(mrtr_memory.log) == []


async def post_call(console: Console, run_id: str, body: str, *, who: str = "dev") -> httpx.Response:
    """POST a call body exactly as written (json= would refuse or re-encode what these tests send)."""
    headers = {**console.auth(who), "Content-Type": "application/json"}
    return await console.client.post(f"/api/v1/runs/{run_id}/calls", content=body, headers=headers)


def complete_now(arguments: str) -> str:
    """A call body of the `complete_now` tool with `arguments` as raw JSON text."""
    return (
        '{"server": "mrtr", "method": "tools/call", "params": {"name": "complete_now", "arguments": '
        + arguments
        + "}}"
    )


async def calls_in(console: Console, run_id: str) -> list[str]:
    async with console.runtime.factory() as session:
        return list((await session.execute(select(Call.status).where(Call.run_id == run_id))).scalars())


DEEP = 100_000


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (complete_now('{"x": ' + "[" * DEEP + "]" * DEEP + "}"), "body"),
        (complete_now('{"x": ' + "[" * 100 + "]" * 100 + "}"), "params"),
        ("{" * DEEP, "body"),
        (complete_now('{"x": NaN}'), "body"),
        (complete_now('{"x": -Infinity}'), "body"),
        (complete_now('{"x": 1e400}'), "body"),
        ("[]", "body"),
        ('{"server": "mrtr", ', "body"),
    ],
    ids=["100k deep", "100 deep", "100k open", "NaN", "Infinity", "1e400", "array", "cut short"],
)
async def test_a_call_body_that_is_not_plain_json_is_refused_with_422_naming_the_field(
    database_url: str, mrtr_memory: Mrtr, body: str, field: str
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        run_id = await console.new_run()
        error = error_of(await post_call(console, run_id, body), 422)
        assert error["code"] == "invalid"
        assert field in error["fields"], error
        assert await calls_in(console, run_id) == []  # nothing was recorded, nothing was sent

        after = await console.call("mrtr", "complete_now", {"x": "after"}, run_id=run_id)
        assert result_text(after) == "hello after"
    assert [r["arguments"] for r in read_log(mrtr_memory.log)] == [{"x": "after"}]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ('{"x": "\\ud800"}', "params.arguments.x"),
        ('{"list": ["fine", {"deeper": "a\\udfffb"}]}', "params.arguments.list.1.deeper"),
        ('{"\\ud800": "x"}', "params.arguments"),
    ],
    ids=["value", "nested value", "member name"],
)
async def test_a_lone_surrogate_is_refused_with_422_and_the_shared_connection_keeps_serving_others(
    database_url: str, mrtr_stdio: Mrtr, arguments: str, field: str
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        server_process = result_text(await console.call("mrtr", "pid", {}, who="lead"))
        run_id = await console.new_run()

        error = error_of(await post_call(console, run_id, complete_now(arguments)), 422)
        assert list(error["fields"]) == [field]
        assert "lone surrogate" in error["fields"][field]
        assert await calls_in(console, run_id) == []  # not started, so never interrupted

        # Another person's call right after goes out on the same connection, to the same process.
        assert result_text(await console.call("mrtr", "pid", {}, who="lead")) == server_process
        mine = await console.call("mrtr", "complete_now", {"x": "\u00e9\U0001f600"}, run_id=run_id)
        assert result_text(mine) == "hello \u00e9\U0001f600"
        assert await calls_in(console, run_id) == ["completed"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ('{"action": "accept", "content": {"name": "\\ud800"}}', "content.name"),
        ('{"action": "accept", "content": {"name": ' + "[" * DEEP + "]" * DEEP + "}}", "body"),
        ('{"action": "accept", "content": {"name": ' + "[" * 100 + "]" * 100 + "}}", "content"),
        ('{"action": "decline", ', "body"),
    ],
    ids=["surrogate", "100k deep", "100 deep", "cut short"],
)
async def test_an_answer_that_is_not_plain_json_is_refused_and_the_question_stays_open(
    database_url: str, mrtr_memory: Mrtr, body: str, field: str
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "t"})
        question_id = call["pending"][0]["id"]
        response = await console.client.post(
            f"/api/v1/elicitations/{question_id}/answer",
            content=body,
            headers={**console.auth("lead"), "Content-Type": "application/json"},
        )
        assert field in error_of(response, 422)["fields"]
        assert (await console.question(question_id))["status"] == "pending"

        second = await console.answer_and_settle(call, "accept", {"name": "Ada"})
        assert [p["key"] for p in second["pending"]] == ["second"]


@pytest.mark.parametrize(
    "name", [b"%ED%A0%80", b"\xed\xa0\x80", b"%ED%A0%80" * 1000], ids=["escaped", "raw", "many"]
)
async def test_a_web_answer_carrying_a_surrogates_bytes_is_taken_as_text_and_breaks_nothing(
    database_url: str, mrtr_stdio: Mrtr, name: bytes
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        server_process = result_text(await console.call("mrtr", "pid", {}, who="lead"))
        call = await console.call("mrtr", "two_rounds", {"topic": "t"})
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            page = await lead.client.get(f"/elicitations/{question_id}")
            form = one(html(page), "form#decision-form")
            field = str(one(form, 'input[type="text"]')["name"])  # the "name" the server asks for
            body = (
                urlencode({**form_fields(form), "action": "accept"}).encode() + f"&{field}=".encode() + name
            )
            headers = {"Content-Type": "application/x-www-form-urlencoded"}
            answered = await lead.client.post(f"/elicitations/{question_id}", content=body, headers=headers)
        assert answered.status_code == 303, answered.text  # bytes that are no UTF-8 arrive as U+FFFD
        second = await console.settle(call["id"], after_round=1)
        assert [p["key"] for p in second["pending"]] == ["second"]
        assert result_text(await console.call("mrtr", "pid", {}, who="lead")) == server_process


async def test_a_run_body_that_is_not_json_names_the_body_not_a_character_offset(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        headers = {**console.auth("dev"), "Content-Type": "application/json"}
        for body in ('{"team": "platform", "title": ', "{'team': 'platform'}", ""):
            error = error_of(await console.client.post("/api/v1/runs", content=body, headers=headers), 422)
            assert list(error["fields"]) == ["body"], (body, error)
            assert error["fields"]["body"].startswith("is not JSON")
        surrogate = '{"team": "platform", "title": "\\ud800"}'
        error = error_of(await console.client.post("/api/v1/runs", content=surrogate, headers=headers), 422)
        assert list(error["fields"]) == ["title"]


# --- who may ------------------------------------------------------------------------------


async def test_requests_without_a_valid_token_are_refused_with_401(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        run_id = await console.new_run()
        call = await console.call("mrtr", "two_rounds", {"topic": "t"}, run_id=run_id)
        question_id = call["pending"][0]["id"]
        bad_credentials: dict[str, dict[str, str]] = {
            "none": {},
            "unknown token": {"Authorization": "Bearer mcpc_not-a-real-token"},
            "empty bearer": {"Authorization": "Bearer "},
            "password": {"Authorization": "Basic ZGV2OmRldi1wdy0x"},
            "token without scheme": {"Authorization": console.tokens["dev"]},
        }
        client = console.client
        for what, headers in bad_credentials.items():
            responses = [
                await client.post("/api/v1/runs", json={"team": TEAM, "title": "t"}, headers=headers),
                await client.post(
                    f"/api/v1/runs/{run_id}/calls",
                    json={"server": "mrtr", "method": "tools/call", "params": {"name": "pid"}},
                    headers=headers,
                ),
                await client.get(f"/api/v1/calls/{call['id']}", headers=headers),
                await client.get("/api/v1/elicitations", headers=headers),
                await client.get(f"/api/v1/elicitations/{question_id}", headers=headers),
                await client.post(
                    f"/api/v1/elicitations/{question_id}/answer", json={"action": "decline"}, headers=headers
                ),
            ]
            for response in responses:
                assert error_of(response, 401)["code"] == "unauthorized", (what, response.request.url)
                assert response.headers["www-authenticate"].lower().startswith("bearer")
        assert (await console.question(question_id))["status"] == "pending"
    assert [r["name"] for r in read_log(mrtr_memory.log)] == ["two_rounds"]


async def test_another_teams_member_can_neither_see_nor_answer_the_question(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        run_id = await console.new_run()
        call = await console.call("mrtr", "two_rounds", {"topic": "t"}, run_id=run_id)
        question_id = call["pending"][0]["id"]
        outsider = console.auth("outsider")

        seen = await console.client.get(f"/api/v1/elicitations/{question_id}", headers=outsider)
        assert error_of(seen, 404)["code"] == "not_found"
        answered = await console.answer(question_id, "accept", {"name": "Mallory"}, who="outsider")
        assert error_of(answered, 404)["code"] == "not_found"
        assert await console.pending_questions("outsider") == []
        call_seen = await console.client.get(f"/api/v1/calls/{call['id']}", headers=outsider)
        assert error_of(call_seen, 404)["code"] == "not_found"
        started = await console.start("mrtr", "tools/call", {"name": "pid"}, who="outsider", run_id=run_id)
        assert error_of(started, 404)["code"] == "not_found"

        assert [q["id"] for q in await console.pending_questions("lead")] == [question_id]
        stored = await console.question(question_id)
        assert (stored["status"], stored["decided_by"]) == ("pending", None)
        done = await console.answer_and_settle(call, "decline")
        assert result_text(done) == "stopped at first: decline"


# --- servers that misbehave ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("ask_sampling", ("sampling/createMessage", "never advertised")),
        ("ask_roots", ("roots/list", "never advertised")),
        ("bad_schema", ("invalid form schema",)),
        ("bad_url", ("not http(s)", "javascript:alert(1)")),
    ],
)
async def test_a_server_breaking_the_protocol_fails_the_call_with_a_clear_error(
    database_url: str, mrtr_memory: Mrtr, tool: str, expected: tuple[str, ...]
) -> None:
    tag = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        response = await console.start("mrtr", "tools/call", {"name": tool, "arguments": {"tag": tag}})
        assert response.status_code == 200, response.text
        call = response.json()
        assert call["status"] == "failed", call
        assert call["pending"] == []
        assert call["result"] is None
        message = call["error"]["message"]
        assert all(part in message for part in expected), message
        assert await console.get_call(call["id"], wait=1) == call  # stays failed
    # The console answered nothing: the server never got a retry.
    assert [r["has_request_state"] for r in requests_with(mrtr_memory.log, "tag", tag)] == [False]


async def test_a_refused_link_is_named_without_its_query(database_url: str, mrtr_memory: Mrtr) -> None:
    """The error reaches the audit log and the run page, which the link's owner does not see alone."""
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call = await console.call("mrtr", "bad_url", {"url": "myapp://callback?code=one-time#state"})
        assert call["status"] == "failed", call
        message = call["error"]["message"]
        assert "'myapp://callback'" in message, message
        assert "one-time" not in message, message


async def test_a_call_that_keeps_asking_is_abandoned_at_the_round_cap(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}, round_cap=3) as console:
        call = await console.call("mrtr", "many_rounds", {})
        asked: list[str] = []
        for _ in range(5):  # bounded: the cap is 3
            if call["status"] != "awaiting_input":
                break
            [pending] = call["pending"]
            asked.append(pending["key"])
            schema = (await console.question(pending["id"]))["requested_schema"]
            call = await console.answer_and_settle(call, "accept", content_for(schema))
        assert asked == ["q1", "q2", "q3"]
        assert call["status"] == "abandoned"
        assert call["round"] == 3
        assert call["pending"] == []
        assert "round cap" in call["error"]["message"]
        assert "3" in call["error"]["message"]
        assert await console.pending_questions("dev") == []  # the fourth question was never parked
    sent = read_log(mrtr_memory.log)
    assert [r["request_state"] for r in sent] == [None, "many:1", "many:2", "many:3"]
