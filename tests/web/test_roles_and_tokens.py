"""Roles and API tokens: auditors only read, a token carries its user's role at the time of each request,
and leaving a team ends the user's tokens for it for good."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select, update

from console.audit.models import AuditEvent
from console.identity.models import Membership
from console.web.errors import as_sentence
from tests.harness import (
    TEAM,
    Console,
    Mrtr,
    html,
    one,
    promote,
    running_console,
    signed_in,
    user_id,
)

pytestmark = pytest.mark.anyio

READ_ONLY = "auditors have read-only access: they may look at runs and calls but not start or steer them"
AUDITOR_ANSWER = "auditors can see this question but not answer it"


async def refusals(console: Console, who: str) -> list[dict[str, Any]]:
    """The access_refused events of one person: subject and payload."""
    actor = await user_id(console, who)
    async with console.runtime.factory() as session:
        query = (
            select(AuditEvent)
            .where(AuditEvent.action == "access_refused", AuditEvent.actor_id == actor)
            .order_by(AuditEvent.seq)
        )
        return [
            {"subject": e.subject_type, "team": e.team_id is not None, **json.loads(e.payload_json)}
            for e in (await session.execute(query)).scalars()
        ]


async def token_events(console: Console) -> list[dict[str, Any]]:
    async with console.runtime.factory() as session:
        query = select(AuditEvent).where(AuditEvent.action == "token_revoked").order_by(AuditEvent.seq)
        return [json.loads(e.payload_json) for e in (await session.execute(query)).scalars()]


async def waiting_call(console: Console) -> tuple[dict[str, Any], str]:
    """A call of dev's that waits for an answer, and its run."""
    run_id = await console.new_run("dev")
    call = await console.call("mrtr", "two_rounds", {"topic": "roles"}, run_id=run_id)
    assert call["status"] == "awaiting_input", call
    return call, run_id


def refused(response: Any, message: str) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"] == {"code": "forbidden", "message": message}


async def test_an_auditor_token_reads_everything_but_every_change_is_refused_and_audited(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, run_id = await waiting_call(console)
        question = call["pending"][0]["id"]
        auditor = console.auth("viewer")

        # Reading works.
        assert (await console.get_call(call["id"], who="viewer"))["status"] == "awaiting_input"
        assert (await console.question(question, who="viewer"))["status"] == "pending"
        assert (await console.client.get("/api/v1/servers", headers=auditor)).status_code == 200

        # Changing does not.
        run = {"team": TEAM, "title": "audit probe", "agent": "pytest"}
        refused(await console.client.post("/api/v1/runs", json=run, headers=auditor), READ_ONLY)
        body = {"server": "mrtr", "method": "tools/call", "params": {"name": "complete_now", "arguments": {}}}
        refused(
            await console.client.post(f"/api/v1/runs/{run_id}/calls", json=body, headers=auditor), READ_ONLY
        )
        for step in ("abandon", "resend"):
            response = await console.client.post(f"/api/v1/calls/{call['id']}/{step}", headers=auditor)
            refused(response, READ_ONLY)
        refused(await console.answer(question, "accept", {"name": "Ada"}, who="viewer"), AUDITOR_ANSWER)

        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
        recorded = await refusals(console, "viewer")
        assert [(r["subject"], r["attempt"], r["reason"]) for r in recorded] == [
            ("team", "create_run", READ_ONLY),
            ("run", "start_call", READ_ONLY),
            ("call", "abandon", READ_ONLY),
            ("call", "resend", READ_ONLY),
            ("elicitation", "answer:accept", AUDITOR_ANSWER),
        ]
        assert all(r["team"] for r in recorded)  # the team's auditors and admins see them


async def test_a_run_owner_made_auditor_can_no_longer_start_steer_or_answer_until_made_member_again(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, run_id = await waiting_call(console)
        question = call["pending"][0]["id"]
        assert question in {q["id"] for q in await console.pending_questions("dev")}
        await promote(console, "dev", role="auditor")
        dev = console.auth("dev")
        assert await console.pending_questions("dev") == []  # nothing left to answer

        body = {"server": "mrtr", "method": "tools/call", "params": {"name": "complete_now", "arguments": {}}}
        refused(await console.client.post(f"/api/v1/runs/{run_id}/calls", json=body, headers=dev), READ_ONLY)
        refused(await console.client.post(f"/api/v1/calls/{call['id']}/abandon", headers=dev), READ_ONLY)
        refused(await console.client.post(f"/api/v1/calls/{call['id']}/resend", headers=dev), READ_ONLY)
        refused(await console.answer(question, "accept", {"name": "Ada"}, who="dev"), AUDITOR_ANSWER)
        async with signed_in(console, "dev") as browser:
            page = await browser.client.get(f"/elicitations/{question}")
            assert page.status_code == 200
            assert html(page).select("form#decision-form") == []  # no buttons for an auditor
            posted = await browser.client.post(
                f"/elicitations/{question}",
                data={"csrf_token": browser.csrf, "action": "accept", "name": "Ada"},
            )
            assert posted.status_code == 403
            assert as_sentence(AUDITOR_ANSWER) in one(html(posted), "main").get_text()
        still = await console.get_call(call["id"])
        assert (still["status"], still["round"]) == ("awaiting_input", call["round"])
        assert len(await refusals(console, "dev")) == 5

        # The role is read at every request: made a member again, the same token steers the call.
        await promote(console, "dev", role="member")
        abandoned = await console.client.post(f"/api/v1/calls/{call['id']}/abandon", headers=dev)
        assert abandoned.status_code == 200, abandoned.text
        assert abandoned.json()["status"] == "abandoned"


async def test_a_demoted_approvers_token_cannot_answer_from_the_next_request_on(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, _run = await waiting_call(console)
        question = call["pending"][0]["id"]
        assert (await console.question(question, who="lead"))["status"] == "pending"
        await promote(console, "lead", role="member")
        response = await console.answer(question, "accept", {"name": "Ada"}, who="lead")
        assert response.status_code == 403, response.text
        assert "only the team's approvers" in response.json()["error"]["message"]
        assert (await console.question(question, who="lead2"))["status"] == "pending"


async def test_removing_a_member_revokes_their_tokens_for_good_even_when_they_are_added_back(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        dev = console.auth("dev")
        assert (await console.client.get("/api/v1/servers", headers=dev)).status_code == 200
        base = f"/admin/teams/{TEAM}"
        async with signed_in(console, "lead") as lead:
            removed = await lead.client.post(f"{base}/members/dev/remove", data={"csrf_token": lead.csrf})
            assert removed.status_code == 303
            assert (await console.client.get("/api/v1/servers", headers=dev)).status_code == 401
            added = await lead.client.post(
                f"{base}/members", data={"csrf_token": lead.csrf, "name": "dev", "role": "member"}
            )
            assert added.status_code == 303
            # Back in the team, the old token stays dead; only a new one works.
            assert (await console.client.get("/api/v1/servers", headers=dev)).status_code == 401
            tokens = html(await lead.client.get(f"{base}/tokens"))
            [row] = [r for r in tokens.select("#tokens tbody tr") if r.select("td")[0].get_text() == "dev"]
            assert "revoked" in row.get_text()
        [event] = await token_events(console)
        assert (event["owner"], event["team"], event["reason"]) == ("dev", TEAM, "membership ended")
        assert console.tokens["dev"] not in json.dumps(event)


async def test_only_the_teams_own_admins_pin_its_servers_protocol_through_the_api(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """Another team's admin learns not even that the server exists; the team's auditor and member are
    refused; none of them changes it."""
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        async with console.runtime.factory() as session:
            outsider = await user_id(console, "outsider")
            made_admin = update(Membership).where(Membership.user_id == outsider).values(role="admin")
            await session.execute(made_admin)
            await session.commit()
        pin = {"protocol_version": "2025-11-25"}

        async def patch(who: str, name: str = "mrtr") -> Any:
            return await console.client.patch(f"/api/v1/servers/{name}", json=pin, headers=console.auth(who))

        elsewhere, missing = await patch("outsider"), await patch("outsider", "no-such-server")
        auditor, member = await patch("viewer"), await patch("dev")
        [listed] = (await console.client.get("/api/v1/servers", headers=console.auth("dev"))).json()
        changes = await console.audit_payloads("server_changed")
    assert (elsewhere.status_code, missing.status_code) == (404, 404), elsewhere.text
    assert elsewhere.json()["error"]["message"] == "no server 'mrtr' in elsewhere"
    assert auditor.status_code == 403, auditor.text
    assert member.status_code == 403, member.text
    assert listed["pinned_protocol"] is None
    assert changes == []
