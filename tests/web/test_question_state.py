"""The question page of a two-approver question after each answer: the approval count, who signed, and the
time left (or when it ended) always match the question as it is, in the htmx swap and in the full page."""

from __future__ import annotations

import re
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from tests.harness import Browser, Console, Mrtr, form_fields, html, one, running_console, signed_in, text
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio

HTMX = {"HX-Request": "true"}


async def two_approver_question(console: Console) -> str:
    await set_policy(console, required_approvals=2)
    call = await console.call("mrtr", "two_rounds", {"topic": "quorum"})
    assert call["status"] == "awaiting_input", call
    question_id: str = call["pending"][0]["id"]
    return question_id


async def answer(who: Browser, question_id: str, extra: dict[str, str], *, htmx: bool) -> BeautifulSoup:
    """Submit the decision form as `who` would; the swapped fragment, or the page after the redirect."""
    url = f"/elicitations/{question_id}"
    form = one(html(await who.client.get(url)), "form#decision-form")
    response = await who.client.post(url, data={**form_fields(form), **extra}, headers=HTMX if htmx else {})
    if htmx:
        assert response.status_code == 200, response.text[:800]
        fragment = html(response)
        assert fragment.find("body") is None
        roots = [t for t in fragment.contents if isinstance(t, Tag)]
        assert [t.get("id") for t in roots] == ["question-state"]  # the whole changing part, swapped at once
        return fragment
    assert (response.status_code, response.headers["location"]) == (303, url), response.text[:800]
    return await full_page(who, question_id)


async def full_page(who: Browser, question_id: str) -> BeautifulSoup:
    response = await who.client.get(f"/elicitations/{question_id}")
    assert response.status_code == 200, response.text[:800]
    return html(response)


WAITING = r"Waiting since \d\d:\d\d UTC \( ?.* ago ?\) · \d+ h left ?, then .*"


def state(soup: BeautifulSoup) -> dict[str, Any]:
    """What a person reads in the changing part of the page."""
    part = one(soup, "#question-state")
    return {
        "approvals": text(one(part, ".approvals")),
        "signers": [text(one(li, "strong")) for li in part.select("ul.signatures li")],
        "time": text(one(part, "p.timing")),
        "notice": text(one(part, "#decision .notice")) if part.select("#decision .notice") else None,
        "outcome": text(part.select("#outcome .status")[0]) if part.select("#outcome") else None,
    }


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
async def test_the_count_signers_and_time_follow_each_answer(
    database_url: str, mrtr_memory: Mrtr, htmx: bool
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await two_approver_question(console)
        async with signed_in(console, "lead") as lead, signed_in(console, "lead2") as lead2:
            before = state(await full_page(lead, question_id))
            assert (before["approvals"], before["signers"]) == ("Approvals: 0 of 2", [])
            assert re.fullmatch(WAITING, before["time"]), before["time"]

            first = await answer(lead, question_id, {"action": "accept", "f0": "Ada"}, htmx=htmx)
            for seen in (state(first), state(await full_page(lead, question_id))):
                assert seen["approvals"] == "Approvals: 1 of 2"
                assert seen["signers"] == ["lead"]
                assert seen["notice"] == (
                    "You have signed this answer. It waits for 1 more approval from other people."
                )
                assert re.fullmatch(WAITING, seen["time"]), seen["time"]
            # Nothing left to type: the page follows the other approvers by itself.
            watching = one(first, "#question-state")
            assert (watching["hx-get"], watching["hx-trigger"]) == (
                f"/elicitations/{question_id}/state",
                "every 5s",
            )
            # lead2 sees lead's signature before co-signing; a page with a form never refreshes itself.
            co_sign = await full_page(lead2, question_id)
            assert state(co_sign)["approvals"] == "Approvals: 1 of 2"
            assert not one(co_sign, "#question-state").has_attr("hx-trigger")

            second = await answer(lead2, question_id, {"action": "accept"}, htmx=htmx)
            refreshed = await lead.client.get(f"/elicitations/{question_id}/outcome", headers=HTMX)
            assert refreshed.status_code == 200, refreshed.text[:800]
            pages = [
                second,
                html(refreshed),
                await full_page(lead, question_id),
                await full_page(lead2, question_id),
            ]
            for seen in map(state, pages):
                assert seen["approvals"] == "Approvals: 2 of 2"
                assert seen["signers"] == ["lead", "lead2"]
                assert seen["outcome"] == "accepted"
                assert re.fullmatch(r"Asked .* ago · ended .* ago", seen["time"]), seen["time"]
            for soup in pages:
                assert "left" not in text(one(soup, "#question-state"))
        assert (await console.question(question_id))["status"] == "accepted"


async def test_a_decline_by_the_second_approver_shows_who_signed_and_when_it_ended(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await two_approver_question(console)
        async with signed_in(console, "lead") as lead, signed_in(console, "lead2") as lead2:
            await answer(lead, question_id, {"action": "accept", "f0": "Ada"}, htmx=True)
            declined = state(await answer(lead2, question_id, {"action": "decline"}, htmx=True))
            assert declined["approvals"] == "Approvals: 1 of 2"
            assert declined["signers"] == ["lead", "lead2"]
            assert declined["outcome"] == "declined"
            assert re.fullmatch(r"Asked .* ago · ended .* ago", declined["time"]), declined["time"]


async def test_the_answer_waiting_for_a_second_approver_reads_the_same_for_each_viewer(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await two_approver_question(console)
        async with signed_in(console, "lead") as lead, signed_in(console, "lead2") as lead2:
            await answer(lead, question_id, {"action": "accept", "f0": "Ada <b>"}, htmx=False)
            signer, cosigner = [await full_page(who, question_id) for who in (lead, lead2)]
        shown = [one(soup, "#fixed-content") for soup in (signer, cosigner)]
        assert str(shown[0]) == str(shown[1])  # the signer and the next approver see one table
        assert [text(row) for row in shown[0].select("tbody tr")] == ["name Ada <b>"]
        assert signer.select("#fixed-content b, pre.json") == []  # a table of text, never a JSON dump
