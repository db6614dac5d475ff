"""The gate question's page as an approver sees it: what would be sent (server, tool, its description and
annotations, the arguments with long values folded, agent, run, requester, the rule that asked); a
decline with a reason; and changing the arguments in the form generated from the tool's inputSchema."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from tests.harness import Browser, Mrtr, form_fields, html, one, running_console, signed_in, text
from tests.policies.setup import set_policy
from tests.processes import requests_with

pytestmark = pytest.mark.anyio


def as_posted(form: Tag) -> dict[str, str]:
    """What a browser posts of the form as it is shown: hidden and visible inputs, text areas."""
    fields = form_fields(form)
    for field in form.select("input:not([type=hidden]):not([type=checkbox]):not([type=radio])"):
        fields[str(field["name"])] = str(field.get("value", ""))
    for area in form.select("textarea"):
        fields[str(area["name"])] = area.get_text()
    return fields


async def page(who: Browser, question_id: str) -> BeautifulSoup:
    response = await who.client.get(f"/elicitations/{question_id}")
    assert response.status_code == 200, response.text[:800]
    return html(response)


async def test_an_approver_sees_what_would_be_sent_and_declines_with_a_reason(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    long_note = "x" * 500
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="complete_now", gate=True)
        call = await console.call("mrtr", "complete_now", {"x": "short", "note": long_note})
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            shown = await page(lead, question_id)
            assert "Nothing has reached the server yet" in text(one(shown, ".asking"))
            assert text(one(shown, "h1")) == "Approve calling complete_now on mrtr?"
            assert text(one(shown, ".tool-name")) == "complete_now"
            assert text(one(shown, ".tool-description")) == "Completes at once."
            assert "destructiveHint: true" in text(one(shown, ".annotations"))
            assert text(one(shown, ".gate-rule")) == "tool rule complete_now on mrtr"
            assert text(one(shown, ".agent")) == "pytest"
            rows = {text(one(row, "th")): row for row in shown.select(".arguments-table tr")}
            assert text(rows["x"]) == 'x "short"'
            folded = one(rows["note"], "details")
            assert text(one(folded, "summary")).endswith("…")
            assert long_note in text(one(folded, "pre"))

            form = one(shown, "form#decision-form")
            declined = await lead.client.post(
                f"/elicitations/{question_id}",
                data={**as_posted(form), "action": "decline", "reason": "<b>not</b> today"},
            )
            assert declined.status_code == 303, declined.text[:800]
            outcome = one(await page(lead, question_id), "#outcome")
            assert text(one(outcome, ".decline-reason")) == "Reason: <b>not</b> today"  # text, not markup
            assert "declined" in text(outcome)
        ended = await console.get_call(call["id"])
        assert ended["status"] == "declined"
        assert ended["error"]["reason"] == "<b>not</b> today"
    assert requests_with(mrtr_stdio.log, "x", "short") == []


async def test_an_approver_changes_the_arguments_in_the_generated_form(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    asked, changed = secrets.token_hex(6), secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="complete_now", gate=True, allow_edit=True)
        call = await console.call("mrtr", "complete_now", {"x": asked})
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            form = one(await page(lead, question_id), "form#decision-form")
            posted: dict[str, Any] = as_posted(form)
            field = one(form, "fieldset.answer input")
            assert field.get("value") == asked  # filled with what the agent sent
            posted[str(field["name"])] = changed
            approved = await lead.client.post(
                f"/elicitations/{question_id}", data={**posted, "action": "accept"}
            )
            assert approved.status_code == 303, approved.text[:800]
        done = await console.settle(call["id"], after_round=0)
        assert done["status"] == "completed"
    assert requests_with(mrtr_stdio.log, "x", asked) == []
    assert len(requests_with(mrtr_stdio.log, "x", changed)) == 1


async def test_the_form_posted_unchanged_approves_the_arguments_as_sent(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    asked = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="complete_now", gate=True, allow_edit=True)
        call = await console.call("mrtr", "complete_now", {"x": asked, "extra": [1, 2]})
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            form = one(await page(lead, question_id), "form#decision-form")
            approved = await lead.client.post(
                f"/elicitations/{question_id}", data={**as_posted(form), "action": "accept"}
            )
            assert approved.status_code == 303, approved.text[:800]
        done = await console.settle(call["id"], after_round=0)
        assert done["status"] == "completed"
        question = await console.question(question_id)
        assert question["content"] == {"arguments": {"x": asked, "extra": [1, 2]}}
    # Sent as the agent sent it: an argument the form does not show is kept.
    assert [r["arguments"] for r in requests_with(mrtr_stdio.log, "x", asked)] == [
        {"x": asked, "extra": [1, 2]}
    ]


async def test_an_edit_into_a_stricter_rule_is_refused_to_the_owner_and_shown_to_the_next_approver(
    database_url: str, mrtr_stdio: Mrtr
) -> None:
    """The owner may approve their own call as asked, but not changed into arguments whose rule forbids
    self-approval; an approver's same change waits for a second approver, whose page says why."""
    asked = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_stdio.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="complete_now", gate=True, allow_edit=True)
        await set_policy(
            console,
            "tool",
            server="mrtr",
            tool="complete_now",
            condition='x == "everyone"',
            gate=True,
            required_approvals=2,
            no_self_approval=True,
        )
        call = await console.call("mrtr", "complete_now", {"x": asked})
        question_id = call["pending"][0]["id"]

        async def approve_for_everyone(who: Browser) -> Any:
            form = one(await page(who, question_id), "form#decision-form")
            posted: dict[str, Any] = as_posted(form)
            posted[str(one(form, "fieldset.answer input")["name"])] = "everyone"
            return await who.client.post(f"/elicitations/{question_id}", data={**posted, "action": "accept"})

        async with signed_in(console, "dev") as dev:
            refused = await approve_for_everyone(dev)
            assert refused.status_code == 403, refused.text[:800]
            assert "no self-approval" in refused.text
            assert "the changed arguments fall under tool rule complete_now on mrtr when x ==" in refused.text
        assert (await console.question(question_id))["policy"]["required_approvals"] == 1
        async with signed_in(console, "lead") as lead:
            assert (await approve_for_everyone(lead)).status_code == 303
        async with signed_in(console, "lead2") as lead2:
            shown = await page(lead2, question_id)
            raised = text(one(shown, "#raised-by-edit"))
            assert (
                'the changed arguments fall under tool rule complete_now on mrtr when x == "everyone"'
                in raised
            )
            assert "2 different people must approve the same answer." in raised
            assert text(one(shown, ".approvals")) == "Approvals: 1 of 2"
        assert (await console.get_call(call["id"]))["status"] == "awaiting_input"
    assert requests_with(mrtr_stdio.log, "x", "everyone") == []
