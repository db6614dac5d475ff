"""Who may answer, for every answering policy × person × question kind, through the API and the web form.

Each person tries to accept the form question and the link question of one real call. An allowed person
sends an answer that fails validation (422), which proves they passed the policy without using the
question up; a refused one gets 403 with the policy's reason (404 in another team), recorded in the
audit log. The inbox of each
person lists the form question exactly when they may answer it.
"""

from __future__ import annotations

from contextlib import AsyncExitStack

import pytest
from sqlalchemy import select

from console.audit.models import AuditEvent
from tests.harness import Browser, Console, Mrtr, form_fields, html, one, running_console, signed_in
from tests.policies.setup import add_person, set_policy

pytestmark = pytest.mark.anyio

OWNER_ONLY = "the policy lets only the run's owner answer it"
NOT_OWNER = "the policy lets only the team's approvers answer it, not the run's owner"
NO_SELF = "the policy forbids the run's owner from answering it (no self-approval)"
AUDITOR = "auditors can see this question but not answer it"
MEMBER = "only the team's approvers (or the run's owner, where the policy allows) can answer it"
URL = "a URL question can only be answered by the person whose agent made the call"
OK = None
HIDDEN = "not found"  # not even visible: not in the team, or (on the web) a member who may not see the run

# dev's agent makes the call; lead approves; dev2 is another member; viewer audits; outsider is elsewhere.
PEOPLE = ("dev", "lead", "dev2", "viewer", "outsider")
POLICIES: dict[str, dict[str, object]] = {
    "default": {},
    "owner": {"answerers": "owner"},
    "approvers": {"answerers": "approvers"},
    "no_self_approval": {"no_self_approval": True},
    "approvers_and_no_self": {"answerers": "approvers", "no_self_approval": True},
}
FORM: dict[str, tuple[str | None, ...]] = {  # per policy, in the order of PEOPLE
    "default": (OK, OK, MEMBER, AUDITOR, HIDDEN),
    "owner": (OK, OWNER_ONLY, OWNER_ONLY, AUDITOR, HIDDEN),
    "approvers": (NOT_OWNER, OK, MEMBER, AUDITOR, HIDDEN),
    "no_self_approval": (NO_SELF, OK, MEMBER, AUDITOR, HIDDEN),
    "approvers_and_no_self": (NO_SELF, OK, MEMBER, AUDITOR, HIDDEN),
}
LINK = (OK, URL, URL, AUDITOR, HIDDEN)  # whatever the policy


async def start_questions(console: Console) -> tuple[str, str]:
    call = await console.call("mrtr", "form_and_url", {})
    assert call["status"] == "awaiting_input", call
    ids = {p["key"]: p["id"] for p in call["pending"]}
    return ids["approve"], ids["connect"]


async def api_attempt(console: Console, who: str, elicitation_id: str, *, link: bool) -> str | None:
    bad = {"x": 1} if link else {"ok": "perhaps"}  # fails validation once the policy lets the person in
    response = await console.answer(elicitation_id, "accept", bad, who=who)
    if response.status_code == 422:
        return OK
    if response.status_code == 404:
        return HIDDEN
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "forbidden"
    message: str = response.json()["error"]["message"]
    return message


async def web_attempt(who: Browser, elicitation_id: str, *, link: bool) -> str | None:
    page = await who.client.get(f"/elicitations/{elicitation_id}")
    if page.status_code == 404:
        return HIDDEN
    assert page.status_code == 200, page.text
    soup = html(page)
    forms = soup.select("form#decision-form")
    # The page never offers a form to someone it would refuse; post as a crafted request all the same.
    data = {"csrf_token": who.csrf, "digest": "", "action": "accept"}
    if forms:
        data.update(form_fields(forms[0]))
        for box in forms[0].select('input[type="checkbox"]'):
            data[str(box["name"])] = "perhaps"  # not a yes/no: fails validation, keeps the question open
    response = await who.client.post(f"/elicitations/{elicitation_id}", data=data)
    if response.status_code == 403:
        assert not forms, "a refused person was offered the decision form"
        return " ".join(one(html(response), "main").get_text(" ").split())
    assert forms, "an allowed person was not offered the decision form"
    if link:
        assert response.status_code == 303, response.text  # to the consent gate, where links are opened
        assert response.headers["location"] == f"/connect/{elicitation_id}"
    else:
        assert response.status_code == 422, response.text
    return OK


async def refusals_recorded(console: Console, elicitation_id: str) -> int:
    async with console.runtime.factory() as session:
        query = select(AuditEvent).where(
            AuditEvent.action == "access_refused", AuditEvent.subject_id == elicitation_id
        )
        return len((await session.execute(query)).scalars().all())


@pytest.mark.parametrize("policy", list(POLICIES))
async def test_policy_matrix(database_url: str, mrtr_memory: Mrtr, policy: str) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await add_person(console, "dev2", "member")
        await set_policy(console, **POLICIES[policy])  # type: ignore[arg-type]
        async with AsyncExitStack() as stack:
            browsers = {name: await stack.enter_async_context(signed_in(console, name)) for name in PEOPLE}

            form_id, link_id = await start_questions(console)
            api_form = [await api_attempt(console, who, form_id, link=False) for who in PEOPLE]
            api_link = [await api_attempt(console, who, link_id, link=True) for who in PEOPLE]
            assert tuple(api_form) == FORM[policy]
            assert tuple(api_link) == LINK
            refused = sum(1 for r in (*api_form, *api_link) if r is not OK)  # 403s and other teams' 404s
            assert (
                await refusals_recorded(console, form_id) + await refusals_recorded(console, link_id)
                == refused
            )

            inboxes = {who: {q["id"] for q in await console.pending_questions(who)} for who in PEOPLE}
            for who, expected in zip(PEOPLE, FORM[policy], strict=True):
                assert (form_id in inboxes[who]) is (expected is OK), who

            form_id, link_id = await start_questions(console)  # fresh questions for the web form
            web_form = [await web_attempt(browsers[who], form_id, link=False) for who in PEOPLE]
            web_link = [await web_attempt(browsers[who], link_id, link=True) for who in PEOPLE]
            assert matches(web_form, on_the_web(FORM[policy])), web_form
            assert matches(web_link, on_the_web(LINK)), web_link


def on_the_web(expected: tuple[str | None, ...]) -> tuple[str | None, ...]:
    """On the web a member who may not answer may not see the run either, so the page is not found."""
    return tuple(
        HIDDEN if who == "dev2" and e is not OK else e for who, e in zip(PEOPLE, expected, strict=True)
    )


def _said(reason: str) -> str:
    return reason[0].upper() + reason[1:]


def matches(got: list[str | None], expected: tuple[str | None, ...]) -> bool:
    """Outcomes equal, where a refusal's page must say the expected reason (as a sentence, on the web)."""
    return len(got) == len(expected) and all(
        g == e if e in (OK, HIDDEN) else (g not in (OK, HIDDEN) and _said(e) in str(g))
        for g, e in zip(got, expected, strict=True)
    )
