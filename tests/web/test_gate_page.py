"""The gate question's page as an approver sees it: what would be sent (server, tool, its description and
annotations, the arguments with long values folded, agent, run, requester, the rule that asked); a
decline with a reason; and changing the arguments in the form generated from the tool's inputSchema."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from tests.harness import (
    Browser,
    Mrtr,
    form_fields,
    html,
    memory_mrtr,
    one,
    running_console,
    signed_in,
    text,
)
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
    database_url: str, mrtr_memory: Mrtr
) -> None:
    long_note = "x" * 500
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, "tool", server="mrtr", tool="complete_now", gate=True)
        call = await console.call("mrtr", "complete_now", {"x": "short", "note": long_note})
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            shown = await page(lead, question_id)
            assert text(one(shown, ".asking")) == "Approval gate · mrtr"
            # The call in the console's words: a long value is named and cut, never the server's prose.
            assert text(one(shown, "h1")) == "Complete now — x short?"
            assert text(one(shown, "#decision-summary")) == (
                f"Complete now — x short, note {'x' * 39}… · tool complete_now on mrtr"
            )
            assert text(one(shown, ".tool-name")) == "complete_now"
            assert text(one(shown, ".tool-description")) == "Completes at once."
            assert "destructiveHint: true" in text(one(shown, ".annotations"))
            assert text(one(shown, ".gate-rule")) == "tool rule complete_now on mrtr"
            assert text(one(shown, ".agent")) == "pytest"
            rows = {text(one(row, "th")): row for row in shown.select("#arguments tbody tr")}
            assert text(rows["x"]) == "x short"
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
            assert text(one(outcome, ".call-outcome")).startswith("The call ended: declined")
            assert "Nothing was sent to mrtr." in text(one(outcome, ".call-outcome"))
            done_page = await page(lead, question_id)
            assert not done_page.select("#why-you, #policy-line, .time-left, #decision")  # nothing left to do
        ended = await console.get_call(call["id"])
        assert ended["status"] == "declined"
        assert ended["error"]["reason"] == "<b>not</b> today"
    assert requests_with(mrtr_memory.log, "x", "short") == []


async def test_an_approver_changes_the_arguments_in_the_generated_form(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    asked, changed = secrets.token_hex(6), secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
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
    assert requests_with(mrtr_memory.log, "x", asked) == []
    assert len(requests_with(mrtr_memory.log, "x", changed)) == 1


async def test_the_form_posted_unchanged_approves_the_arguments_as_sent(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    asked = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
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
    assert [r["arguments"] for r in requests_with(mrtr_memory.log, "x", asked)] == [
        {"x": asked, "extra": [1, 2]}
    ]


async def test_an_edit_into_a_stricter_rule_is_refused_to_the_owner_and_shown_to_the_next_approver(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """The owner may approve their own call as asked, but not changed into arguments whose rule forbids
    self-approval; an approver's same change waits for a second approver, whose page says why."""
    asked = secrets.token_hex(6)
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
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
            # The change reads the same for the approver who made it, the next approver and the owner.
            async with signed_in(console, "lead") as lead, signed_in(console, "dev") as dev:
                tables = [one(await page(who, question_id), "#arguments") for who in (lead, lead2, dev)]
            assert [str(t) for t in tables[1:]] == [str(tables[0])] * 2
            [row] = tables[0].select("tbody tr")
            assert (text(one(row, "del.before")), text(one(row, "ins.after"))) == (asked, "everyone")
            assert "changed by an approver" in text(row)
            form = one(shown, "form#decision-form")
            assert text(one(form, "button[value=accept]")) == "Approve and complete now"
            done = await lead2.client.post(
                f"/elicitations/{question_id}", data={**as_posted(form), "action": "accept"}
            )
            assert done.status_code == 303, done.text[:800]
            await console.settle(call["id"], after_round=0)
            after = await page(lead2, question_id)
            assert str(one(after, "#arguments")) == str(tables[0])  # the outcome shows the same difference
            assert not after.select("#why-you, #policy-line, .time-left")
    assert len(requests_with(mrtr_memory.log, "x", "everyone")) == 1


HOSTILE_TITLES = [
    '<img src=x onerror="window.__pwned=1">Read-only lookup: nothing is changed',
    "Read only lookup",
]


@pytest.mark.parametrize("hostile_title", HOSTILE_TITLES)
async def test_a_hostile_tool_title_neither_adds_markup_nor_words_the_decision(
    database_url: str, tmp_path: Path, hostile_title: str
) -> None:
    """The server titles and describes its tool as harmless, with markup or in plain words: the decision is
    still worded by the console from the tool's name and the real arguments, and the server's text is shown
    as text."""
    log = tmp_path / "log.jsonl"
    hostile = memory_mrtr(log, MRTR_TOOL_TEXT=hostile_title)
    async with running_console(database_url, {"mrtr": hostile}) as console:
        await set_policy(console, "tool", server="mrtr", tool="odd_text", gate=True)
        call = await console.call("mrtr", "odd_text", {"table": "customers", "mode": "drop"})
        [pending] = call["pending"]
        assert pending["message"] == "Odd text customers?"
        async with signed_in(console, "lead") as lead:
            shown = await page(lead, pending["id"])
    for where in ("title", "h1", "#decision-summary"):
        assert "lookup" not in text(one(shown, where)), where
    assert text(one(shown, "h1")) == "Odd text customers?"
    assert text(one(shown, "#decision-summary")) == "Odd text customers drop · tool odd_text on mrtr"
    rows = [text(row) for row in shown.select("#arguments tbody tr")]
    assert rows == ["table customers", "mode drop"]
    assert shown.select("main img") == []  # the title's markup is text
    assert hostile_title in text(one(shown, ".tool-description"))
    assert requests_with(log, "table", "customers") == []
