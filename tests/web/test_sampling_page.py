"""The question page of a sampling request: everything the server asked the model is shown as text, an
approver writes the reply in the page (a browser without JavaScript), an empty reply is refused next to
the field, and an auditor sees it but cannot answer."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from console.calls.rounds.input_requests import MAX_REPLY_CHARS
from tests.harness import (
    Console,
    Mrtr,
    form_fields,
    html,
    one,
    result_text,
    running_console,
    signed_in,
    text,
)
from tests.policies.setup import set_policy
from tests.web.test_csrf_and_routes import audit_count
from tests.web.test_hostile_text import BENIGN, PAYLOADS, shape

pytestmark = pytest.mark.anyio


async def asked(console: Console, payload: str) -> dict[str, Any]:
    call = await console.call("mrtr", "sample", {"payload": payload})
    assert call["status"] == "awaiting_input", call
    return call


async def test_the_reply_a_person_writes_goes_back_as_the_models_answer(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, "server", server="mrtr", sampling=True)
        call = await asked(console, "the weather")
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "lead") as lead:
            page = html(await lead.client.get(f"/elicitations/{question_id}"))
            assert text(one(page, "h1.question-message")) == "Write the model's reply to: Then: the weather"
            assert text(one(page, "#sampling-system-prompt")) == "System: the weather"
            assert text(one(page, "#sampling-max-tokens")) == "at most 77 tokens"
            policy = [text(item) for item in page.select("#policy-heading ~ ul li")]
            assert "Unanswered after 1 day, the call is abandoned." in policy
            assert text(one(page, "#sampling-preferences")) == "model hint: the weather; cost priority 0.2"
            assert [text(m) for m in page.select("#sampling-messages li")] == [
                "user First: the weather",
                "assistant An earlier reply",
                "user [image content]",
                "user Then: the weather",
            ]
            form = one(page, "form#decision-form")
            reply = one(form, "textarea#sampling-reply")
            assert reply["maxlength"] == str(MAX_REPLY_CHARS)
            data = {**form_fields(form), "action": "accept", str(reply["name"]): ""}
            refused = await lead.client.post(f"/elicitations/{question_id}", data=data)
            assert refused.status_code == 422
            assert one(html(refused), "#sampling-reply-error")  # said next to the field
            data[str(reply["name"])] = "Sunny, 21 °C.\nNo rain."
            sent = await lead.client.post(f"/elicitations/{question_id}", data=data)
            assert sent.status_code == 303, sent.text[:2000]
        done = await console.settle(call["id"], after_round=call["round"])
        assert result_text(done) == "sampled role=assistant model=human stop=endTurn: Sunny, 21 °C.\nNo rain."


async def test_an_auditor_sees_a_sampling_request_but_cannot_write_its_reply(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, "server", server="mrtr", sampling=True)
        call = await asked(console, "audit me")
        question_id = call["pending"][0]["id"]
        async with signed_in(console, "viewer") as auditor:
            page = html(await auditor.client.get(f"/elicitations/{question_id}"))
            assert page.select("#sampling-messages li")
            assert not page.select("textarea#sampling-reply")
            posted = await auditor.client.post(
                f"/elicitations/{question_id}",
                data={"csrf_token": auditor.csrf, "action": "accept", "f0": "forged reply"},
            )
            assert posted.status_code == 403
        assert await audit_count(console, "access_refused") == 1  # refused for the role, and recorded
        still = await console.get_call(call["id"])
        assert still["status"] == "awaiting_input"


async def test_hostile_text_in_a_sampling_request_stays_text(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await set_policy(console, "server", server="mrtr", sampling=True)
        async with signed_in(console, "lead") as lead:

            async def shown(payload: str) -> Counter[tuple[str, tuple[str, ...]]]:
                call = await asked(console, payload)
                response = await lead.client.get(f"/elicitations/{call['pending'][0]['id']}")
                assert response.status_code == 200
                page = html(response)
                assert text(one(page, "#sampling-system-prompt")) == f"System: {payload}"
                return shape(page)

            benign = await shown(BENIGN)
            for payload in PAYLOADS:
                assert await shown(payload) == benign, payload  # no element or attribute was added
