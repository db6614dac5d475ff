"""Refusals leave a trace: another team's runs, calls and questions are not found (and each attempt is
audited as `access_refused`), a link question is its owner's alone even to read, and the outcome of a
question that is still pending is a clear 422, never a 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from tests.harness import Console, Mrtr, html, one, running_console, signed_in, text, user_id

pytestmark = pytest.mark.anyio

LINK = "https://connect.example.com/start?flow=abc"  # what the test server asks dev to open


async def refusals(console: Console, who: str) -> list[dict[str, Any]]:
    """`access_refused` events of one person, oldest first: subject, attempt, how they came, payload."""
    actor = await user_id(console, who)
    async with console.runtime.factory() as session:
        rows = (
            await session.execute(
                select(AuditEvent)
                .where(AuditEvent.action == "access_refused", AuditEvent.actor_id == actor)
                .order_by(AuditEvent.seq)
            )
        ).scalars()
        return [
            {
                "subject": (row.subject_type, row.subject_id),
                "attempt": json.loads(row.payload_json)["attempt"],
                "via": json.loads(row.payload_json)["via"].partition(":")[0],
                "payload": row.payload_json,
                "team_id": row.team_id,
            }
            for row in rows
        ]


async def dev_waits(console: Console) -> tuple[dict[str, Any], str, str]:
    """dev's call waiting on a form question and a link question: (call, form id, link id)."""
    call = await console.call("mrtr", "form_and_url", {})
    ids = {p["key"]: p["id"] for p in call["pending"]}
    return call, ids["approve"], ids["connect"]


async def test_an_outsider_is_not_found_anywhere_in_another_team_through_the_api_and_each_try_is_audited(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, form_id, link_id = await dev_waits(console)
        api = console.client
        outsider = console.auth("outsider")
        body = {"server": "mrtr", "method": "tools/call", "params": {"name": "pid"}}
        tries = {
            ("elicitation", form_id, "view"): await api.get(
                f"/api/v1/elicitations/{form_id}", headers=outsider
            ),
            ("elicitation", link_id, "answer:decline"): await api.post(
                f"/api/v1/elicitations/{link_id}/answer", json={"action": "decline"}, headers=outsider
            ),
            ("call", call["id"], "view"): await api.get(f"/api/v1/calls/{call['id']}", headers=outsider),
            ("call", call["id"], "abandon"): await api.post(
                f"/api/v1/calls/{call['id']}/abandon", headers=outsider
            ),
            ("call", call["id"], "resend"): await api.post(
                f"/api/v1/calls/{call['id']}/resend", headers=outsider
            ),
            ("run", call["run_id"], "start_call"): await api.post(
                f"/api/v1/runs/{call['run_id']}/calls", json=body, headers=outsider
            ),
        }
        assert {what: r.status_code for what, r in tries.items()} == dict.fromkeys(tries, 404)
        assert all(r.json()["error"]["code"] == "not_found" for r in tries.values())

        recorded = await refusals(console, "outsider")
        assert [(*e["subject"], e["attempt"]) for e in recorded] == list(tries)
        assert {e["via"] for e in recorded} == {"token"}
        assert {e["team_id"] for e in recorded} == {recorded[0]["team_id"]} != {None}  # dev's team sees them
        assert all("not a member" in json.loads(e["payload"])["reason"] for e in recorded)

        # Nothing moved: the call still waits for both answers, and dev's agent carries on.
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
        assert {
            q["status"] for q in (await console.question(form_id), await console.question(link_id, who="dev"))
        } == {"pending"}


async def test_a_teammate_reading_someone_elses_link_question_through_the_api_is_refused_and_audited(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        _call, form_id, link_id = await dev_waits(console)
        assert (await console.question(form_id, who="lead"))["status"] == "pending"  # the form is theirs too

        refused = await console.client.get(f"/api/v1/elicitations/{link_id}", headers=console.auth("lead"))
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "not_found"
        assert LINK not in refused.text

        [event] = await refusals(console, "lead")
        assert (event["subject"], event["attempt"], event["via"]) == (
            ("elicitation", link_id),
            "view",
            "token",
        )
        assert json.loads(event["payload"])["mode"] == "url"
        assert "connect.example.com" not in event["payload"]  # the record never carries the link
        assert (await console.question(link_id, who="dev"))["url"] == LINK  # its owner still reads it


async def test_an_outsider_is_not_found_on_another_teams_pages_and_each_try_is_audited(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, form_id, link_id = await dev_waits(console)
        async with signed_in(console, "outsider") as outsider:
            web = outsider.client
            tries = {
                ("elicitation", form_id, "view"): await web.get(f"/elicitations/{form_id}"),
                ("elicitation", form_id, "answer:web"): await web.post(
                    f"/elicitations/{form_id}", data={"csrf_token": outsider.csrf, "action": "decline"}
                ),
                ("elicitation", form_id, "view_outcome"): await web.get(f"/elicitations/{form_id}/outcome"),
                ("elicitation", link_id, "view"): await web.get(f"/connect/{link_id}"),
                ("run", call["run_id"], "view"): await web.get(f"/runs/{call['run_id']}"),
            }
        assert {what: r.status_code for what, r in tries.items()} == dict.fromkeys(tries, 404)
        assert all(text(one(html(r), "h1")) == "Not found" for r in tries.values())

        recorded = await refusals(console, "outsider")
        assert [(*e["subject"], e["attempt"]) for e in recorded] == list(tries)
        assert {e["via"] for e in recorded} == {"session"}
        assert all(LINK not in e["payload"] for e in recorded)
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"


async def test_the_outcome_of_a_pending_question_is_a_422_and_a_link_outcome_is_its_owners_alone(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        call, form_id, link_id = await dev_waits(console)
        async with signed_in(console, "dev") as dev, signed_in(console, "lead") as lead:
            for who, question in ((dev, form_id), (dev, link_id), (lead, form_id)):
                pending = await who.client.get(f"/elicitations/{question}/outcome")
                assert pending.status_code == 422, pending.text
                assert "still pending" in text(one(html(pending), "main"))
            assert await refusals(console, "dev") == []

            teammate = await lead.client.get(f"/elicitations/{link_id}/outcome")
            assert teammate.status_code == 404
            [event] = await refusals(console, "lead")
            assert (event["subject"], event["attempt"], event["via"]) == (
                ("elicitation", link_id),
                "view_outcome",
                "session",
            )

            assert (await console.answer(form_id, "accept", {"ok": True})).status_code == 200
            decided = await lead.client.get(f"/elicitations/{form_id}/outcome")
            assert decided.status_code == 200
            assert text(one(html(decided), "#outcome > p:first-of-type > .status")) == "accepted"
            assert (await console.get_call(call["id"]))["status"] == "awaiting_input"  # the link still waits
