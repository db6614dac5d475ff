"""An answer counts only for the question as it was shown: one naming another question's digest (a stale or
mixed-up page, an agent answering from an old listing) is refused with 409 and changes nothing."""

from __future__ import annotations

import pytest

from tests.harness import Console, Mrtr, form_fields, html, one, result_text, running_console, signed_in, text

pytestmark = pytest.mark.anyio
STALE = "the question changed since it was shown; reload it"


async def two_questions(console: Console) -> tuple[dict[str, str], dict[str, str]]:
    """Two pending questions (id and digest) of two calls of the same tool, which differ in one argument."""
    first = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
    second = await console.call("mrtr", "two_rounds", {"topic": "beta"})
    for call in (first, second):
        assert call["status"] == "awaiting_input", call
        assert call["pending"], call
    shown = [await console.question(c["pending"][0]["id"]) for c in (first, second)]
    assert shown[0]["digest"] != shown[1]["digest"]
    return {"id": shown[0]["id"], "digest": shown[0]["digest"], "call": first["id"]}, {
        "id": shown[1]["id"],
        "digest": shown[1]["digest"],
        "call": second["id"],
    }


async def test_an_api_answer_naming_what_another_question_showed_is_refused(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        alpha, beta = await two_questions(console)
        refused = await console.answer(alpha["id"], "accept", {"name": "x"}, digest=beta["digest"])
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["message"] == STALE
        assert (await console.question(alpha["id"]))["status"] == "pending"
        assert (await console.get_call(alpha["call"]))["status"] == "awaiting_input"  # nothing was resumed

        taken = await console.answer(alpha["id"], "accept", {"name": "x"}, digest=alpha["digest"])
        assert taken.status_code == 200, taken.text
        assert (await console.settle(alpha["call"], after_round=1))["round"] == 2


async def test_a_form_posted_with_another_questions_digest_is_refused_and_shown_again(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        alpha, beta = await two_questions(console)
        async with signed_in(console, "lead") as lead:
            url = f"/elicitations/{alpha['id']}"
            form = one(html(await lead.client.get(url)), "form#decision-form")
            fields = form_fields(form)
            assert fields["digest"] == alpha["digest"]
            posted = await lead.client.post(
                url, data={**fields, "action": "decline", "digest": beta["digest"]}
            )
            assert posted.status_code == 409, posted.text
            assert text(one(html(posted), "p.warning[role=alert]")) == STALE[:1].upper() + STALE[1:] + "."
            assert (await console.question(alpha["id"]))["status"] == "pending"

            declined = await lead.client.post(url, data={**fields, "action": "decline"})
            assert declined.status_code == 303, declined.text
        done = await console.settle(alpha["call"])
        assert result_text(done) == "stopped at first: decline"
        assert (await console.question(beta["id"]))["status"] == "pending"
