"""Escalation: a policy names a group (a role, or people) emailed when a question is still unanswered after
N minutes — through a real SMTP server process, at the time the test's clock says, only to those of the
group who may answer it, never for a question answered or expired first. A group that names nobody the
policy allows, or strangers, is refused when the rule is saved.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from console.notify.models import Delivery
from tests.harness import TEAM, Mrtr, html, one, promote, signed_in, text
from tests.notify.kept import Kept
from tests.notify.mail import ADDRESSES, deliveries, mailing, parts, received, send_due
from tests.policies.setup import set_policy
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio

SUBJECT = "Escalated: mrtr: a question for dev's call to two_rounds"


def escalations(found: list[Delivery]) -> list[Delivery]:
    return [d for d in found if d.event == "question.escalated"]


async def test_an_unanswered_question_is_escalated_at_its_time_to_the_group_members_who_may_answer_it(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        # dev may not answer (approvers only) and viewer is an auditor: of the three, only lead is told.
        await set_policy(
            console,
            "team",
            answerers="approvers",
            expiry_minutes=120,
            escalate_after_minutes=30,
            escalate_to="dev,lead,viewer",
        )
        first = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        second = await console.call("mrtr", "two_rounds", {"topic": "beta"})
        await send_due(console)
        assert await send_due(console, timedelta(minutes=29)) == 0
        declined = await console.answer(first["pending"][0]["id"], "decline")
        assert declined.status_code == 200, declined.text
        before = len(received(mailbox))

        await send_due(console, timedelta(minutes=30, seconds=5))
        escalated = [(to, m) for to, m in received(mailbox)[before:] if m["Subject"] == SUBJECT]
        assert [to for to, _ in escalated] == [[ADDRESSES["lead"]]]
        body, _ = parts(escalated[0][1])
        assert body.startswith("Nobody has answered this yet, so the team's policy sends it to you too.")
        assert f"/elicitations/{second['pending'][0]['id']}" in body
        assert "Time left: 1 h 30 min." in body
        # The answered question's escalation went to nobody; each goes once.
        assert [(d.subject_id, d.status) for d in escalations(await deliveries(console))] == [
            (second["pending"][0]["id"], "sent")
        ]
        await send_due(console, timedelta(minutes=31))
        assert [m["Subject"] for _, m in received(mailbox)].count(SUBJECT) == 1

        async with signed_in(console, "lead") as lead:  # the question page says so
            page = await lead.client.get(f"/elicitations/{second['pending'][0]['id']}")
            assert "Unanswered after 30 minutes, it is escalated to dev, lead, viewer." in page.text


async def test_a_role_is_escalated_to_only_where_the_question_still_waits_then(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        await promote(console, "lead", role="admin")
        await set_policy(
            console, "team", expiry_minutes=20, escalate_after_minutes=30, escalate_to="role:admin"
        )
        expires_first = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        await set_policy(
            console, "team", expiry_minutes=60, escalate_after_minutes=30, escalate_to="role:admin"
        )
        waits = await console.call("mrtr", "two_rounds", {"topic": "beta"})
        await send_due(console)
        before = len(received(mailbox))
        await send_due(console, timedelta(minutes=30, seconds=5))
        escalated = [(to, parts(m)[0]) for to, m in received(mailbox)[before:] if m["Subject"] == SUBJECT]
        # Only the question that outlives its escalation gets one, and only the admin: lead2 (an approver
        # who turned email off anyway) and dev (the owner, not an admin) are not in the group.
        assert [to for to, _ in escalated] == [[ADDRESSES["lead"]]]
        assert f"/elicitations/{waits['pending'][0]['id']}" in escalated[0][1]
        assert f"/elicitations/{expires_first['pending'][0]['id']}" not in escalated[0][1]
        assert [d.subject_id for d in escalations(await deliveries(console))] == [waits["pending"][0]["id"]]


async def test_an_escalation_group_that_is_not_a_role_or_the_teams_members_is_refused(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        await promote(console, "lead", role="admin")
        page = f"/admin/teams/{TEAM}/policies"
        async with signed_in(console, "lead") as admin:

            async def refused(**fields: str) -> dict[str, str]:
                form = {"csrf_token": admin.csrf, "scope": "team", **fields}
                response = await admin.client.post(page, data=form)
                assert response.status_code == 422, response.text
                found = html(response)
                return {
                    name: text(one(found, f"#{name}-error"))
                    for name in ("escalate_to", "escalate_after_minutes")
                    if found.select(f"#{name}-error")
                }

            assert "role:approver or role:admin" in (await refused(escalate_to="role:owner"))["escalate_to"]
            assert (await refused(escalate_to="lead,outsider,nobody")) == {
                "escalate_to": "not members of this team: outsider, nobody"
            }
            assert "whole number" in (await refused(escalate_after_minutes="soon"))["escalate_after_minutes"]
            assert "from 1 to" in (await refused(escalate_after_minutes="0"))["escalate_after_minutes"]
            saved = await admin.client.post(
                page,
                data={
                    "csrf_token": admin.csrf,
                    "scope": "team",
                    "escalate_after_minutes": "45",
                    "escalate_to": "role:admin",
                },
            )
            assert saved.status_code == 303, saved.text
            rules = html(await admin.client.get(page))
            assert text(one(rules, "#policy-rules td[data-label=Escalation]")) == "45 min, to role:admin"
