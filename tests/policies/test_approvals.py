"""The policy rules in action against a real MCP server: N-of-M co-signing, no self-approval, expiry with
the policy's answer, step-up, and the stricter default for destructive tools of trusted servers."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from console.calls.models import DispatchJob
from console.calls.questions.decisions import expire_due
from console.db import utcnow
from console.identity.models import User, WebSession
from console.transactions import transaction
from tests.harness import (
    Console,
    form_fields,
    html,
    memory_mrtr,
    one,
    result_text,
    running_console,
    signed_in,
    stdio_deployer,
)
from tests.policies.setup import add_person, set_policy, set_server_trust
from tests.processes import read_log

pytestmark = pytest.mark.anyio


def resumes(log: Path, tool: str = "two_rounds") -> list[dict[str, Any]]:
    """What the server received back for the first question of each call, one entry per resume."""
    return [r["input_responses"] for r in read_log(log) if r["name"] == tool and r.get("input_responses")]


async def resume_jobs(console: Console, call_id: str) -> int:
    async with console.runtime.factory() as session:
        query = select(func.count()).where(DispatchJob.call_id == call_id, DispatchJob.kind == "resume")
        return int((await session.execute(query)).scalar_one())


async def test_two_of_three_approvers_co_sign_one_answer_and_it_resumes_once(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await add_person(console, "lead3", "approver")
        await set_policy(console, required_approvals=2)
        call = await console.call("mrtr", "two_rounds", {"topic": "quorum"})
        question = call["pending"][0]["id"]

        first = await console.answer(question, "accept", {"name": "Ada"}, who="lead")
        assert first.status_code == 200, first.text
        signed = first.json()
        assert (signed["status"], signed["approvals"], signed["policy"]["required_approvals"]) == (
            "pending",
            1,
            2,
        )
        assert [s["user"] for s in signed["signatures"]] == ["lead"]
        assert signed["content"] == {"name": "Ada"}
        # The decision and its resume share one transaction: no resume exists after the first accept.
        assert await resume_jobs(console, call["id"]) == 0
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"

        twice = await console.answer(question, "accept", {"name": "Ada"}, who="lead")
        assert twice.status_code == 409
        assert "you already answered this question" in twice.json()["error"]["message"]
        other = await console.answer(question, "accept", {"name": "Eve"}, who="lead2")
        assert other.status_code == 409
        assert "not the answer the first approver gave" in other.json()["error"]["message"]
        blind = await console.answer(question, "accept", who="lead2")
        assert blind.status_code == 422
        assert "content_digest" in blind.json()["error"]["fields"]
        forged = await console.answer(question, "accept", who="lead2", content_digest="0" * 64)
        assert forged.status_code == 409

        second = await console.answer(
            question, "accept", who="lead2", content_digest=signed["content_digest"]
        )
        assert second.status_code == 200, second.text
        assert (second.json()["status"], second.json()["approvals"]) == ("accepted", 2)
        late = await console.answer(question, "accept", who="lead3", content_digest=signed["content_digest"])
        assert late.status_code == 409
        assert "already answered: accepted by lead2" in late.json()["error"]["message"]

        after = await console.settle(call["id"], after_round=1)
        assert after["round"] == 2
        assert await resume_jobs(console, call["id"]) == 1
    assert resumes(log) == [{"first": {"action": "accept", "content": {"name": "Ada"}}}]


async def test_a_co_signer_also_may_resend_the_same_content_instead_of_its_digest(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, required_approvals=2)
        call = await console.call("mrtr", "two_rounds", {"topic": "same"})
        question = call["pending"][0]["id"]
        assert (await console.answer(question, "accept", {"name": "Ada"}, who="lead")).status_code == 200
        second = await console.answer(question, "accept", {"name": "Ada"}, who="lead2")
        assert second.status_code == 200, second.text
        assert second.json()["status"] == "accepted"


async def test_a_decline_by_the_second_approver_ends_it_declined(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, required_approvals=2)
        call = await console.call("mrtr", "two_rounds", {"topic": "veto"})
        question = call["pending"][0]["id"]
        assert (await console.answer(question, "accept", {"name": "Ada"}, who="lead")).status_code == 200
        veto = await console.answer(question, "decline", who="lead2")
        assert veto.status_code == 200, veto.text
        assert veto.json()["status"] == "declined"
        assert [(s["user"], s["action"]) for s in veto.json()["signatures"]] == [
            ("lead", "accept"),
            ("lead2", "decline"),
        ]
        done = await console.settle(call["id"])
    assert result_text(done) == "stopped at first: decline"
    assert resumes(log) == [{"first": {"action": "decline"}}]


async def test_no_self_approval_leaves_the_owner_a_read_only_page(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, no_self_approval=True)
        call = await console.call("mrtr", "two_rounds", {"topic": "mine"}, who="lead")  # lead's own agent
        question = call["pending"][0]["id"]
        by_api = await console.answer(question, "accept", {"name": "Ada"}, who="lead")
        assert by_api.status_code == 403
        assert (
            by_api.json()["error"]["message"]
            == "the policy forbids the run's owner from answering it (no self-approval)"
        )
        assert question not in {q["id"] for q in await console.pending_questions("lead")}
        async with signed_in(console, "lead") as lead:
            page = html(await lead.client.get(f"/elicitations/{question}"))
            assert not page.select("form#decision-form")
            notice = " ".join(one(page, "p.notice").get_text(" ").split())
            assert notice == (
                "You can see this question but not answer it: "
                "the policy forbids the run's owner from answering it (no self-approval)."
            )
            policy = " ".join(one(page, "section.policy").get_text(" ").split())
            assert "The team's approvers may answer, but not the run's owner (no self-approval)." in policy
            assert "Set by: team default." in policy
            assert "Unanswered after 1 day, it is cancelled." in policy
        answered = await console.answer(question, "accept", {"name": "Ada"}, who="lead2")
        assert answered.status_code == 200


@pytest.mark.parametrize("action", ["cancel", "decline"])
async def test_expired_question_gets_the_policys_answer_exactly_once(
    database_url: str, tmp_path: Path, action: str
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, expiry_minutes=30, expiry_action=action)
        call = await console.call("mrtr", "two_rounds", {"topic": "late"})
        question = await console.question(call["pending"][0]["id"])
        assert question["policy"]["expiry_action"] == action
        asked_for = question["expires_at"], question["created_at"]
        for minutes, expired in ((29, []), (31, [call["id"]]), (32, [])):
            async with transaction(console.runtime.factory) as session:
                assert await expire_due(session=session, now=utcnow() + timedelta(minutes=minutes)) == expired
        console.runtime.signals.work_available()
        done = await console.settle(call["id"])
        late = await console.answer(question["id"], "accept", {"name": "Ada"})
    assert asked_for[0] > asked_for[1]
    assert result_text(done) == f"stopped at first: {action}"
    assert late.status_code == 410
    assert late.json()["error"]["message"] == f"this question expired and was answered {action}"
    assert resumes(log) == [{"first": {"action": action}}]


async def test_step_up_needs_a_recent_sign_in_and_re_authentication_brings_the_person_back(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, step_up_minutes=5)
        call = await console.call("mrtr", "two_rounds", {"topic": "fresh"})
        question = call["pending"][0]["id"]
        token = await console.answer(question, "accept", {"name": "Ada"}, who="lead")
        assert token.status_code == 403
        assert "not with an API token" in token.json()["error"]["message"]
        async with signed_in(console, "lead") as lead:
            await _age_sign_in(console, "lead", minutes=6)
            page = html(await lead.client.get(f"/elicitations/{question}"))
            warning = " ".join(one(page, "form#decision-form p.warning").get_text(" ").split())
            assert "Deciding needs a sign-in within the last 5 minutes. Confirm your sign-in now" in warning
            data = {**form_fields(one(page, "form#decision-form")), "action": "accept"}
            data[str(one(page, 'form#decision-form input[type="text"]')["name"])] = "Ada"
            stale = await lead.client.post(f"/elicitations/{question}", data=data)
            assert stale.status_code == 303
            assert stale.headers["location"] == f"/reauth?next=/elicitations/{question}"
            assert (await console.question(question))["status"] == "pending"

            prompt = html(await lead.client.get(stale.headers["location"]))
            confirm = {**form_fields(one(prompt, "form#reauth-form")), "password": "lead-pw-1"}
            back = await lead.client.post("/reauth", data=confirm)
            assert back.status_code == 303
            assert back.headers["location"] == f"/elicitations/{question}"
            fresh = await lead.client.post(f"/elicitations/{question}", data=data)
            assert fresh.status_code == 303
            assert fresh.headers["location"] == f"/elicitations/{question}"
        assert (await console.question(question))["status"] == "accepted"


async def test_declining_never_needs_step_up(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        await set_policy(console, step_up_minutes=5)
        call = await console.call("mrtr", "two_rounds", {"topic": "no"})
        declined = await console.answer(call["pending"][0]["id"], "decline", who="lead")
        assert declined.status_code == 200, declined.text


async def _age_sign_in(console: Console, name: str, *, minutes: int) -> None:
    """Pretend the person's browser sign-in happened `minutes` ago."""
    async with console.runtime.factory() as session:
        user_id = (await session.execute(select(User.id).where(User.name == name))).scalar_one()
        await session.execute(
            update(WebSession)
            .where(WebSession.user_id == user_id)
            .values(authenticated_at=utcnow() - timedelta(minutes=minutes))
        )
        await session.commit()


@pytest.mark.parametrize(
    ("server", "tool", "trusted", "strict"),
    [
        ("deployer", "deploy", True, True),  # listed as destructive
        ("deployer", "deploy", False, True),
        ("mrtr", "form_and_url", True, False),  # listed as read-only by a trusted server
        ("mrtr", "form_and_url", False, True),  # the same claim from an untrusted server is ignored
        ("mrtr", "two_rounds", True, True),  # no annotations: MCP's defaults (may be destructive)
    ],
)
async def test_the_stricter_default_follows_annotations_of_trusted_servers_only(
    database_url: str, tmp_path: Path, state_key: str, server: str, tool: str, trusted: bool, strict: bool
) -> None:
    servers = {"deployer": stdio_deployer(state_key), "mrtr": memory_mrtr(tmp_path / "requests.jsonl")}
    async with running_console(database_url, servers) as console:
        await set_server_trust(console, server, trusted)
        await set_policy(console, "destructive", required_approvals=2, no_self_approval=True)
        arguments = (
            {"service": "auth-service"}
            if tool == "deploy"
            else {"topic": "t"}
            if tool == "two_rounds"
            else {}
        )
        call = await console.call(server, tool, arguments)
        question = await console.question(next(p["id"] for p in call["pending"] if p["mode"] == "form"))
    expected = ["stricter default for destructive tools"] if strict else []
    assert question["policy"]["set_by"] == expected
    assert question["policy"]["required_approvals"] == (2 if strict else 1)
    assert question["policy"]["no_self_approval"] is strict
