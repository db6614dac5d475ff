"""An answer sent when a step-up was due survives the re-authentication: the console keeps it on the
person's own browser session (never in the URL), fills the form with it once they are back, and gives it
to nobody else, to no other session of theirs, and not after the session ended or the answer went stale."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import update

from console.db import utcnow
from console.identity.models import WebSession
from console.transactions import transaction
from tests.harness import (
    Browser,
    Console,
    Mrtr,
    form_fields,
    html,
    one,
    running_console,
    sign_in,
    signed_in,
    text,
)
from tests.policies.setup import set_policy

pytestmark = pytest.mark.anyio

TYPED = "Ada Lovelace, née Byron"


async def step_up_question(console: Console) -> str:
    await set_policy(console, step_up_minutes=5)
    call = await console.call("mrtr", "two_rounds", {"topic": "kept"})
    question_id: str = call["pending"][0]["id"]
    return question_id


def session_id(who: Browser) -> str:
    return hashlib.sha256(who.client.cookies["console_session"].encode()).hexdigest()


async def age_sign_in(console: Console, who: Browser, *, minutes: int) -> None:
    """Pretend this browser's sign-in happened `minutes` ago."""
    async with transaction(console.runtime.factory) as session:
        await session.execute(
            update(WebSession)
            .where(WebSession.id == session_id(who))
            .values(authenticated_at=utcnow() - timedelta(minutes=minutes))
        )
        await session.commit()


async def question_page(who: Browser, question_id: str) -> BeautifulSoup:
    response = await who.client.get(f"/elicitations/{question_id}")
    assert response.status_code == 200, response.text[:800]
    return html(response)


def name_field(soup: BeautifulSoup) -> str:
    """What the form's name field holds."""
    return str(one(soup, 'form#decision-form input[type="text"]').get("value", ""))


async def accept_too_late(who: Browser, question_id: str, *, htmx: bool = False) -> str:
    """Type the answer and accept with a stale sign-in; where the console sends the browser."""
    form = one(await question_page(who, question_id), "form#decision-form")
    data = {**form_fields(form), "action": "accept", "f0": TYPED}
    headers = {"HX-Request": "true"} if htmx else {}
    response = await who.client.post(f"/elicitations/{question_id}", data=data, headers=headers)
    location = response.headers["hx-redirect"] if htmx else response.headers["location"]
    assert (response.status_code, location) == (
        204 if htmx else 303,
        f"/reauth?next=/elicitations/{question_id}",
    )
    return location


async def confirm_password(who: Browser, name: str, location: str) -> str:
    prompt = html(await who.client.get(location))
    data = {**form_fields(one(prompt, "form#reauth-form")), "password": f"{name}-pw-1"}
    back = await who.client.post("/reauth", data=data)
    assert back.status_code == 303, back.text[:800]
    return str(back.headers["location"])


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
async def test_the_answer_typed_before_step_up_is_in_the_form_after_re_authentication(
    database_url: str, mrtr_memory: Mrtr, htmx: bool
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await step_up_question(console)
        async with signed_in(console, "lead") as lead:
            await age_sign_in(console, lead, minutes=6)
            location = await accept_too_late(lead, question_id, htmx=htmx)
            back = await confirm_password(lead, "lead", location)
            assert back == f"/elicitations/{question_id}"

            page = await question_page(lead, question_id)
            assert name_field(page) == TYPED
            assert "Your answer from before you confirmed your sign-in is filled in" in text(
                one(page, "form#decision-form")
            )
            assert page.select("form#decision-form p.warning") == []  # the step-up is done
            # Taken once: a reload shows the plain form.
            assert name_field(await question_page(lead, question_id)) == ""

            # Accepting the filled-in form as it is sends what was typed before the step-up.
            data = {
                **form_fields(one(page, "form#decision-form")),
                "action": "accept",
                "f0": name_field(page),
            }
            accepted = await lead.client.post(f"/elicitations/{question_id}", data=data)
            assert accepted.status_code == 303, accepted.text[:800]
        answered = await console.question(question_id)
        assert (answered["status"], answered["content"]) == ("accepted", {"name": TYPED})


async def test_the_kept_answer_is_for_the_same_person_and_browser_session_only(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await step_up_question(console)
        async with (
            signed_in(console, "lead") as lead,
            signed_in(console, "lead") as lead_elsewhere,
            signed_in(console, "lead2") as lead2,
        ):
            await age_sign_in(console, lead, minutes=6)
            await accept_too_late(lead, question_id)
            for other in (lead2, lead_elsewhere):
                page = await question_page(other, question_id)
                assert name_field(page) == ""
                assert TYPED not in page.decode()
            # Nobody else's look used it up: lead still gets it back.
            assert name_field(await question_page(lead, question_id)) == TYPED


async def test_the_kept_answer_ends_with_the_session_and_after_a_while(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        question_id = await step_up_question(console)
        async with signed_in(console, "lead") as lead:
            await age_sign_in(console, lead, minutes=6)
            await accept_too_late(lead, question_id)
            signed_out = await lead.client.post("/logout", data={"csrf_token": lead.csrf})
            assert signed_out.status_code == 303
            await sign_in(lead, "lead")  # a new session in the same browser
            page = await question_page(lead, question_id)
            assert name_field(page) == ""
            assert TYPED not in page.decode()

            await age_sign_in(console, lead, minutes=6)
            await accept_too_late(lead, question_id)
            async with transaction(console.runtime.factory) as session:
                await session.execute(
                    update(WebSession)
                    .where(WebSession.id == session_id(lead))
                    .values(kept_form_at=utcnow() - timedelta(minutes=16))
                )
                await session.commit()
            assert name_field(await question_page(lead, question_id)) == ""
        assert (await console.question(question_id))["status"] == "pending"
