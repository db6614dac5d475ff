"""Who a question's emails go to, and at which address, is decided when each goes out — its first notice,
its reminders, its escalation, and each retry of one — from the team's members and roles then, through a
real SMTP server process: someone removed from the team or no longer allowed to answer gets nothing more,
a changed address is the one used, and someone who may answer now is told too."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from urllib.parse import urlsplit

import pytest

from console.audit import SYSTEM
from console.calls.fanout import carriers_for
from console.db import utcnow
from console.identity.emails import set_email, set_email_notifications
from console.identity.teams import add_member, change_role, remove_member
from console.notify.mail import Mailer
from console.notify.sender import deliver_due
from console.transactions import transaction
from tests.harness import TEAM, Console, Mrtr, user_id
from tests.notify.kept import Kept
from tests.notify.mail import ADDRESSES, SENDER, deliveries, mailing, parts, received, send_due
from tests.notify.test_email import closed_port
from tests.policies.setup import set_policy
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio

MOVED = "dev.moved@example.test"  # dev's address once it changed


def mail_about(mailbox: Kept, question_id: str, since: int = 0) -> list[tuple[str, str]]:
    """(recipient, subject) of each email about the question the SMTP server accepted, after the first
    `since` it had."""
    return [
        (to[0], str(message["Subject"]))
        for to, message in received(mailbox)[since:]
        if f"/elicitations/{question_id}" in parts(message)[0]
    ]


async def membership_changes(console: Console) -> None:
    """lead leaves the team, lead2 (who turns email on) becomes a plain member, dev's address changes and
    outsider joins as an approver."""
    lead2 = await user_id(console, "lead2")
    async with transaction(console.runtime.factory) as session:
        await remove_member(session=session, by=None, team_name=TEAM, user_name="lead")
        await set_email_notifications(session=session, actor=SYSTEM, user_id=lead2, on=True)
        await change_role(session=session, by=None, team_name=TEAM, user_name="lead2", role="member")
        await set_email(session=session, name="dev", email=MOVED)
        await add_member(session=session, by=None, team_name=TEAM, user_name="outsider", role="approver")


async def test_reminders_and_escalations_go_to_who_may_answer_when_they_are_sent_at_their_address_then(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        await set_policy(
            console, "team", expiry_minutes=60, escalate_after_minutes=40, escalate_to="role:approver"
        )
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        question = call["pending"][0]["id"]
        assert await send_due(console) == 2
        assert sorted(mail_about(mailbox, question)) == [
            (ADDRESSES["dev"], "mrtr: a question for dev's call to two_rounds"),
            (ADDRESSES["lead"], "mrtr: a question for dev's call to two_rounds"),
        ]
        asked = len(received(mailbox))

        await membership_changes(console)
        await send_due(console, timedelta(minutes=30, seconds=5))
        await send_due(console, timedelta(minutes=40, seconds=5))
        await send_due(console, timedelta(minutes=45, seconds=5))
        reminder = "Reminder: mrtr: a question for dev's call to two_rounds"
        escalated = "Escalated: mrtr: a question for dev's call to two_rounds"
        # dev (the owner) at the new address; outsider, an approver now, is reminded and gets the
        # escalation to the team's approvers; lead, gone, and lead2, no longer an approver, get nothing.
        assert sorted(mail_about(mailbox, question, since=asked)) == sorted(
            [
                (MOVED, reminder),
                (ADDRESSES["outsider"], reminder),
                (ADDRESSES["outsider"], escalated),
                (MOVED, reminder),
                (ADDRESSES["outsider"], reminder),
            ]
        )


async def test_the_first_notice_goes_to_who_may_answer_when_it_is_sent(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        await membership_changes(console)  # before the notifier's pass
        assert await send_due(console) == 2
        assert sorted(to for to, _ in mail_about(mailbox, call["pending"][0]["id"])) == sorted(
            [ADDRESSES["outsider"], MOVED]
        )


async def test_an_email_waiting_to_be_tried_again_goes_to_the_address_then_and_not_to_someone_who_left(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    down = f"smtp://127.0.0.1:{closed_port()}"
    async with mailing(database_url, mrtr_memory, down) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        assert await send_due(console) == 0  # the SMTP server is down: both wait for another attempt
        waiting = {d.recipient: d.status for d in await deliveries(console)}
        assert waiting == {ADDRESSES["dev"]: "pending", ADDRESSES["lead"]: "pending"}

        await membership_changes(console)
        # The mail server is back (here: at another address) when the attempts come due again.
        working = Mailer(host="127.0.0.1", port=urlsplit(smtp.url).port or 0, tls=False, sender=SENDER)
        carriers = replace(carriers_for(console.runtime.settings), mailer=working)
        later = utcnow() + timedelta(seconds=31)
        assert await deliver_due(factory=console.runtime.factory, carriers=carriers, now=later) == 1
        assert mail_about(mailbox, call["pending"][0]["id"]) == [
            (MOVED, "mrtr: a question for dev's call to two_rounds")
        ]
        done = {(d.recipient, d.status) for d in await deliveries(console)}
        assert done == {(ADDRESSES["lead"], "dropped"), (MOVED, "sent")}
