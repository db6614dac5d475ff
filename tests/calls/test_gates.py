"""Approval gates through the REST API: a gated tool call waits before anything reaches the server (the
MRTR test server's own log shows no request), an approval sends it once, a decline ends it with who and
why, approvers may change the arguments where the rule allows, N-of-M and no-self-approval apply, and a
condition on the arguments gates only the calls that meet it."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any

import anyio
import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from console.calls.questions.decisions import expire_due
from console.db import utcnow
from console.dispatch.follow import start_call
from console.errors import InvalidInput
from console.identity import authenticate_token
from console.transactions import transaction
from tests.harness import Console, Mrtr, result_text, running_console
from tests.policies.setup import set_policy
from tests.processes import requests_with

pytestmark = pytest.mark.anyio


async def gate(console: Console, *, condition: str | None = None, **values: Any) -> None:
    """A rule gating the MRTR server's complete_now (its other settings as given)."""
    await set_policy(
        console, "tool", server="mrtr", tool="complete_now", condition=condition, gate=True, **values
    )


async def audit_events(console: Console, call_id: str, action: str) -> list[dict[str, Any]]:
    async with transaction(console.runtime.factory) as session:
        rows = (
            await session.execute(
                select(AuditEvent.payload_json)
                .where(AuditEvent.call_id == call_id, AuditEvent.action == action)
                .order_by(AuditEvent.seq)
            )
        ).scalars()
        return [json.loads(row) for row in rows]


async def test_a_gated_call_reaches_the_server_only_after_approval_and_only_once(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        assert (call["status"], call["round"]) == ("awaiting_input", 0)
        [pending] = call["pending"]
        assert (pending["kind"], pending["mode"]) == ("gate", "gate")
        assert pending["message"] == f"Complete now {topic}?"  # the call in words, from the arguments
        assert requests_with(mrtr_memory.log, "x", topic) == []  # nothing reached the server

        question = await console.question(pending["id"])
        assert question["kind"] == "gate"
        assert question["params"] == {"name": "complete_now", "arguments": {"x": topic}}
        assert question["policy"]["set_by"] == ["tool rule complete_now on mrtr"]

        done = await console.answer_and_settle(call, "accept")
        assert result_text(done) == f"hello {topic}"
        again = await console.answer(pending["id"], "accept", who="lead2")
        assert again.status_code == 409, again.text
    assert len(requests_with(mrtr_memory.log, "x", topic)) == 1


async def test_a_decline_with_a_reason_ends_the_call_unsent_and_says_who_and_why(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        declined = await console.answer(call["pending"][0]["id"], "decline", reason="not during the freeze")
        assert declined.status_code == 200, declined.text
        ended = await console.settle(call["id"])
        assert ended["status"] == "declined"
        assert ended["error"]["message"] == (
            "lead declined this call at the approval gate, so it was not sent. Reason: not during the freeze"
        )
        assert (ended["error"]["decided_by"], ended["error"]["reason"]) == ("lead", "not during the freeze")
        assert ended["pending"] == []
    assert requests_with(mrtr_memory.log, "x", topic) == []


async def test_an_edited_approval_sends_the_edited_arguments_and_the_audit_keeps_both(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic, edited = secrets.token_hex(6), secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, allow_edit=True)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        question_id = call["pending"][0]["id"]
        assert (await console.question(question_id))["requested_schema"]["properties"] == {
            "x": {"type": "string"}
        }
        refused = await console.answer(question_id, "accept", {"arguments": {"x": 5}})
        assert refused.status_code == 422, refused.text
        assert "content.arguments.x" in refused.json()["error"]["fields"]

        done = await console.answer_and_settle(call, "accept", {"arguments": {"x": edited}})
        assert result_text(done) == f"hello {edited}"
        assert done["params"] == {"name": "complete_now", "arguments": {"x": topic}}  # as the agent sent it
        [approved] = await audit_events(console, call["id"], "gate_approved")
        assert (approved["edited"], approved["arguments_asked"], approved["arguments_sent"]) == (
            True,
            {"x": topic},
            {"x": edited},
        )
    assert requests_with(mrtr_memory.log, "x", topic) == []
    assert len(requests_with(mrtr_memory.log, "x", edited)) == 1


async def test_without_allow_edit_approvers_approve_the_arguments_as_sent(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)
        call = await console.call("mrtr", "complete_now", {"x": "asked"})
        refused = await console.answer(call["pending"][0]["id"], "accept", {"arguments": {"x": "other"}})
        assert refused.status_code == 422, refused.text
        assert "not change them" in refused.json()["error"]["fields"]["content.arguments"]


async def test_two_approvers_and_no_self_approval_hold_for_gates(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, required_approvals=2, no_self_approval=True)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        question_id = call["pending"][0]["id"]
        own = await console.answer(question_id, "accept", who="dev")
        assert own.status_code == 403, own.text
        first = await console.answer(question_id, "accept", who="lead")
        assert first.status_code == 200, first.text
        assert (first.json()["status"], first.json()["approvals"]) == ("pending", 1)
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
        assert requests_with(mrtr_memory.log, "x", topic) == []
        twice = await console.answer(question_id, "accept", who="lead")
        assert twice.status_code == 409, twice.text
        second = await console.answer(
            question_id, "accept", who="lead2", content_digest=first.json()["content_digest"]
        )
        assert second.status_code == 200, second.text
        assert result_text(await console.settle(call["id"])) == f"hello {topic}"
    assert len(requests_with(mrtr_memory.log, "x", topic)) == 1


async def test_the_owners_own_token_cannot_approve_their_gated_call(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)  # self-approval allowed by policy: still not with the token an agent holds
        call = await console.call("mrtr", "complete_now", {"x": "mine"})
        own = await console.answer(call["pending"][0]["id"], "accept", who="dev")
        assert own.status_code == 403, own.text
        assert "API token" in own.json()["error"]["message"]
        withdrawn = await console.answer(call["pending"][0]["id"], "cancel", who="dev")
        assert withdrawn.status_code == 200, withdrawn.text
        ended = await console.settle(call["id"])
        assert ended["status"] == "cancelled"
        assert (
            ended["error"]["message"] == "dev cancelled this call at the approval gate, so it was not sent."
        )


async def test_a_condition_on_the_arguments_gates_only_the_calls_that_meet_it(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, condition='x == "production" or amount > 1000')
        staging = await console.call("mrtr", "complete_now", {"x": "staging", "amount": 10})
        assert result_text(staging) == "hello staging"
        production = await console.call("mrtr", "complete_now", {"x": "production"})
        assert production["status"] == "awaiting_input"
        large = await console.call("mrtr", "complete_now", {"x": "staging", "amount": 5000})
        assert large["status"] == "awaiting_input"
        question = await console.question(large["pending"][0]["id"])
        assert question["policy"]["set_by"] == [
            'tool rule complete_now on mrtr when x == "production" or amount > 1000'
        ]


async def test_an_invalid_condition_is_refused_when_saved_with_its_position(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        with pytest.raises(InvalidInput) as refused:
            await gate(console, condition="amount > > 1000")
    assert "column 10" in refused.value.fields["when"]


async def test_a_gate_nobody_answers_in_time_ends_the_call_unsent(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, expiry_minutes=5)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        async with transaction(console.runtime.factory) as session:
            assert await expire_due(session=session, now=utcnow() + timedelta(minutes=6)) == [call["id"]]
        ended = await console.get_call(call["id"])
        assert ended["status"] == "cancelled"
        assert "not answered in time" in ended["error"]["message"]
    assert requests_with(mrtr_memory.log, "x", topic) == []


async def test_an_agents_retry_joins_the_call_that_waits_at_its_gate(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)
        run_id = await console.new_run()
        first = await console.call("mrtr", "complete_now", {"x": topic}, run_id=run_id)
        retried = await console.call("mrtr", "complete_now", {"x": topic}, run_id=run_id)
        assert retried["id"] == first["id"]
        assert [q["call_id"] for q in await console.pending_questions("lead")].count(first["id"]) == 1
        assert result_text(await console.answer_and_settle(first, "accept")) == f"hello {topic}"
        again = await console.call("mrtr", "complete_now", {"x": topic}, run_id=run_id)
        assert (again["id"] != first["id"], again["status"]) == (True, "awaiting_input")  # sent: a new call
    assert len(requests_with(mrtr_memory.log, "x", topic)) == 1


async def test_two_approvers_racing_send_the_call_once(database_url: str, mrtr_memory: Mrtr) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        question_id = call["pending"][0]["id"]
        statuses: list[int] = []

        async def approve(who: str) -> None:
            statuses.append((await console.answer(question_id, "accept", who=who)).status_code)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(approve, "lead")
            tasks.start_soon(approve, "lead2")
        assert sorted(statuses) == [200, 409]
        assert result_text(await console.settle(call["id"])) == f"hello {topic}"
    assert len(requests_with(mrtr_memory.log, "x", topic)) == 1


async def test_co_signers_sign_the_arguments_the_first_approver_chose(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic, edited = secrets.token_hex(6), secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, allow_edit=True, required_approvals=2)
        call = await console.call("mrtr", "complete_now", {"x": topic})
        question_id = call["pending"][0]["id"]
        first = await console.answer(question_id, "accept", {"arguments": {"x": edited}}, who="lead")
        assert first.json()["content"] == {"arguments": {"x": edited}}
        as_sent = await console.answer(question_id, "accept", who="lead2")  # the agent's own arguments
        assert as_sent.status_code == 409, as_sent.text
        cosigned = await console.answer(
            question_id, "accept", who="lead2", content_digest=first.json()["content_digest"]
        )
        assert cosigned.status_code == 200, cosigned.text
        assert result_text(await console.settle(call["id"])) == f"hello {edited}"
    assert [r["arguments"] for r in requests_with(mrtr_memory.log, "x", edited)] == [{"x": edited}]


async def test_nobody_outside_the_policy_decides_a_gate_or_learns_of_it(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, answerers="approvers")
        call = await console.call("mrtr", "complete_now", {"x": topic})
        question_id = call["pending"][0]["id"]
        headers = console.auth("outsider")
        seen = await console.client.get(f"/api/v1/elicitations/{question_id}", headers=headers)
        assert seen.status_code == 404, seen.text
        assert topic not in seen.text
        for who, status in (("outsider", 404), ("viewer", 403), ("dev", 403)):
            refused = await console.answer(question_id, "accept", who=who)
            assert refused.status_code == status, (who, refused.text)
        assert [q["call_id"] for q in await console.pending_questions("outsider")] == []
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
    assert requests_with(mrtr_memory.log, "x", topic) == []


async def test_arguments_the_tools_schema_refuses_are_refused_before_anything_is_recorded(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, condition="amount > 1000")
        for arguments in ({"x": 500000}, {"x": ["a"]}, {"amount": 5}):
            refused = await console.start(
                "mrtr", "tools/call", {"name": "complete_now", "arguments": arguments}
            )
            assert refused.status_code == 422, refused.text
            error = refused.json()["error"]
            assert "inputSchema of tool 'complete_now'" in error["message"]
            field = "params.arguments.x" if "x" in arguments else "params.arguments"
            assert field in error["fields"], error
        assert await console.audit_payloads("call_started") == []
    assert requests_with(mrtr_memory.log, "name", "complete_now") == []


@pytest.mark.parametrize("amount", ["500000", [500000], None])
async def test_an_amount_the_gate_cannot_read_as_a_number_is_gated_under_the_strictest_rule(
    database_url: str, mrtr_memory: Mrtr, amount: Any
) -> None:
    """The issue's reproduction: `amount` is not in the tool's schema, so the server may read "500000" as
    500000; both rules' conditions are undecided, so both apply, and the call needs two approvers."""
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await gate(console, condition="amount > 1000")
        await set_policy(
            console,
            "tool",
            server="mrtr",
            tool="complete_now",
            condition="amount > 100000",
            gate=True,
            required_approvals=2,
        )
        arguments = {"x": topic} if amount is None else {"x": topic, "amount": amount}
        call = await console.call("mrtr", "complete_now", arguments)
        assert (call["status"], call["round"]) == ("awaiting_input", 0)
        question = await console.question(call["pending"][0]["id"])
        assert question["policy"]["required_approvals"] == 2
        assert all("undecided on these arguments" in layer for layer in question["policy"]["set_by"])
        signed = await console.answer(call["pending"][0]["id"], "accept")
        assert signed.status_code == 200, signed.text
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"  # one of two
        small = await console.call("mrtr", "complete_now", {"x": topic, "amount": 50})
        assert result_text(small) == f"hello {topic}"  # a number is decided as written: no gate
    assert len(requests_with(mrtr_memory.log, "x", topic)) == 1


async def test_a_call_recorded_before_its_tool_was_listed_is_checked_before_its_first_send(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """A call the console recorded while it could not ask the server (here: started without the pool) is
    checked by the dispatcher against the listing it holds by then, and fails unsent."""
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        assert result_text(await console.call("mrtr", "complete_now", {"x": topic})) == f"hello {topic}"
        run_id = await console.new_run()
        body = json.dumps(
            {
                "server": "mrtr",
                "method": "tools/call",
                "params": {"name": "complete_now", "arguments": {"x": 7, "t": topic}},
            }
        )
        async with transaction(console.runtime.factory) as session:
            principal = await authenticate_token(session=session, token=console.tokens["dev"])
            started = await start_call(
                session=session,
                principal=principal,
                settings=console.runtime.settings,
                pool=None,
                run_id=run_id,
                body_text=body,
            )
        console.runtime.signals.work_available()
        ended = await console.settle(started.call.id)
        assert ended["status"] == "failed"
        assert ended["error"]["message"].startswith(
            "the arguments do not match the tool's inputSchema, so the call was not sent"
        )
        assert "x: 7 is not of type 'string'" in ended["error"]["message"]
    assert requests_with(mrtr_memory.log, "t", topic) == []


async def payment_gates(console: Console, **large: Any) -> None:
    """One approver for amounts over 1,000 (who may change the arguments); `large` for over 100,000."""
    await gate(console, condition="amount > 1000", allow_edit=True)
    await set_policy(
        console, "tool", server="mrtr", tool="complete_now", condition="amount > 100000", gate=True, **large
    )


async def test_an_edit_into_a_stricter_rule_needs_what_that_rule_asks_before_anything_is_sent(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """The issue's reproduction: a call gated for one approver, approved with its amount raised from 2,000
    to 500,000 and a new recipient, waits for the second approver the rule for 500,000 asks."""
    topic, recipient = secrets.token_hex(6), secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await payment_gates(console, required_approvals=2)
        call = await console.call("mrtr", "complete_now", {"x": topic, "amount": 2000})
        question_id = call["pending"][0]["id"]
        assert (await console.question(question_id))["policy"]["required_approvals"] == 1
        edited = {"x": recipient, "amount": 500000}
        signed = await console.answer(question_id, "accept", {"arguments": edited})
        assert signed.status_code == 200, signed.text
        assert (signed.json()["approvals"], signed.json()["policy"]["required_approvals"]) == (1, 2)
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
        assert requests_with(mrtr_memory.log, "x", recipient) == []  # one approval sent nothing

        question = await console.question(question_id)
        assert question["policy"]["required_approvals"] == 2
        assert question["policy"]["raised_by"] == "tool rule complete_now on mrtr when amount > 100000"
        [raised] = await audit_events(console, call["id"], "gate_policy_raised")
        assert (raised["arguments_asked"], raised["arguments_approved"]) == (
            {"x": topic, "amount": 2000},
            edited,
        )
        assert (raised["before"], raised["after"]) == ({"required_approvals": 1}, {"required_approvals": 2})

        again = await console.answer(question_id, "accept", {"arguments": edited})
        assert again.status_code == 409, again.text  # the same person never counts twice
        done = await console.answer_and_settle(call, "accept", {"arguments": edited}, who="lead2")
        assert result_text(done) == f"hello {recipient}"
        [approved] = await audit_events(console, call["id"], "gate_approved")
        assert (approved["arguments_asked"], approved["arguments_sent"]) == (
            {"x": topic, "amount": 2000},
            edited,
        )
    assert len(requests_with(mrtr_memory.log, "x", recipient)) == 1
    assert requests_with(mrtr_memory.log, "x", topic) == []


async def test_an_edit_into_a_rule_the_approver_does_not_meet_is_refused_and_changes_nothing(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """A rule for large amounts asks for a recent sign-in, which an API token never is: the approver who
    may approve 2,000 is refused for 500,000, says why, and the question stays as it was asked."""
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await payment_gates(console, step_up_minutes=5)
        call = await console.call("mrtr", "complete_now", {"x": topic, "amount": 2000})
        question_id = call["pending"][0]["id"]
        refused = await console.answer(question_id, "accept", {"arguments": {"x": topic, "amount": 500000}})
        assert refused.status_code == 403, refused.text
        message = refused.json()["error"]["message"]
        assert "sign-in within the last 5 minutes" in message
        assert (
            "the changed arguments fall under tool rule complete_now on mrtr when amount > 100000" in message
        )
        question = await console.question(question_id)
        assert (
            question["status"],
            question["policy"]["step_up_minutes"],
            question["policy"]["raised_by"],
        ) == (
            "pending",
            None,
            None,
        )
        assert await audit_events(console, call["id"], "gate_policy_raised") == []
        done = await console.answer_and_settle(call, "accept")  # as the agent asked: 2,000 needs no step-up
        assert result_text(done) == f"hello {topic}"


async def test_an_edit_that_falls_under_no_stricter_rule_is_approved_as_before(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    topic = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await payment_gates(console, required_approvals=2)
        call = await console.call("mrtr", "complete_now", {"x": topic, "amount": 2000})
        done = await console.answer_and_settle(call, "accept", {"arguments": {"x": topic, "amount": 500}})
        assert result_text(done) == f"hello {topic}"
        assert await audit_events(console, call["id"], "gate_policy_raised") == []
