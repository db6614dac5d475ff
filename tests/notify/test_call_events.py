"""What happens to a call after its questions: the requester is emailed who answered and how the call
ended (through a real SMTP server process), the team's signed webhooks get `question.answered` and
`call.*` events (a real HTTP receiver), nobody else hears of it, and a call that asked nobody costs
nothing. The outbox is sent with `deliver_due`, on the test's clock.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select
from standardwebhooks import Webhook

from console.notify.models import Notice
from tests.harness import Mrtr
from tests.notify.kept import Kept
from tests.notify.mail import ADDRESSES, deliveries, mailing, parts, received, send_due
from tests.notify.receivers import add, posts
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio

HOSTILE = '<img src=x onerror="alert(1)">'


def subjects(mailbox: Kept, name: str) -> list[str]:
    return [str(m["Subject"]) for to, m in received(mailbox) if to == [ADDRESSES[name]]]


async def test_the_requester_hears_who_answered_and_how_the_call_ended_and_webhooks_get_the_events(
    database_url: str,
    mrtr_memory: Mrtr,
    smtp: ServerProcess,
    mailbox: Kept,
    receiver: ServerProcess,
    inbox: Kept,
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        secret = await add(
            console, "webhook", f"{receiver.url}/hook", events=["question.answered", "call.completed"]
        )
        assert secret is not None
        call = await console.call("mrtr", "two_rounds", {"topic": HOSTILE})
        await send_due(console)  # the first question, to dev and lead
        # A name no hex id or signature can contain ("ada" once matched a hex string by chance)
        second = await console.answer_and_settle(call, "accept", {"name": "quillon"}, who="lead")
        await send_due(console)
        answered = [m for to, m in received(mailbox) if "accepted a question" in str(m["Subject"])]
        assert [m["To"] for m in answered] == [ADDRESSES["dev"]]  # the requester, not the answerer
        assert answered[0]["Subject"] == "mrtr: lead accepted a question of your call to two_rounds"
        text, markup = parts(answered[0])
        assert "quillon" not in text + markup  # who decided what, never what was answered
        assert "<img" not in markup and "&lt;img src=x" in markup  # noqa: PT018

        done = await console.answer_and_settle(second, "accept", {"amount": 5, "count": 2}, who="dev")
        assert done["status"] == "completed"
        await send_due(console)
        # dev answered the second question themselves: no email says so.
        told = subjects(mailbox, "dev")
        assert told[-1] == "mrtr: your call to two_rounds completed"
        assert [s for s in told if "accepted" in s] == [
            "mrtr: lead accepted a question of your call to two_rounds"
        ]
        assert not [s for s in subjects(mailbox, "lead") if "your call" in s or "accepted" in s]
        ended = [m for to, m in received(mailbox) if "completed" in str(m["Subject"])]
        text, _ = parts(ended[0])
        assert f"http://console.test/runs/{call['run_id']}" in text

        events = [Webhook(secret).verify(p["body"], p["headers"]) for p in posts(inbox)]
        # Sent side by side: the last two in either order.
        assert [e["type"] for e in events][0] == "question.answered"
        assert sorted(e["type"] for e in events) == [
            "call.completed",
            "question.answered",
            "question.answered",
        ]
        first = events[0]["data"]
        [by_owner] = [e["data"] for e in events[1:] if e["type"] == "question.answered"]
        [completed] = [e["data"] for e in events if e["type"] == "call.completed"]
        assert (first["question"]["status"], first["question"]["decided_by"]) == ("accepted", "lead")
        assert first["question"]["id"] == call["pending"][0]["id"]
        assert by_owner["question"]["decided_by"] == "dev"
        assert completed["call"] == {
            "id": call["id"],
            "run_id": call["run_id"],
            "server": "mrtr",
            "tool": "two_rounds",
            "owner": "dev",
            "status": "completed",
            "error": None,
            "page": f"http://console.test/runs/{call['run_id']}",
        }
        assert not any("quillon" in p["body"] for p in posts(inbox))  # answers and results stay in the API


async def test_an_abandoned_call_is_a_failure_and_a_call_that_asked_nobody_is_not_announced(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        plain = await console.call("mrtr", "complete_now", {"x": "world"})
        assert plain["status"] == "completed"
        broken = await console.call("mrtr", "ask_sampling", {})  # sampling it was never offered: failed
        assert broken["status"] == "failed"
        async with console.runtime.factory() as session:
            assert (await session.execute(select(Notice))).scalars().all() == []

        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        abandoned = await console.client.post(
            f"/api/v1/calls/{call['id']}/abandon", headers=console.auth("dev")
        )
        assert abandoned.status_code == 200, abandoned.text
        await send_due(console)
        ended = [d for d in await deliveries(console) if d.event.startswith("call.")]
        assert [(d.event, d.recipient, d.status) for d in ended] == [
            ("call.failed", ADDRESSES["dev"], "sent")
        ]
        [mail] = [m for _, m in received(mailbox) if "abandoned" in str(m["Subject"])]
        assert mail["Subject"] == "mrtr: your call to two_rounds was abandoned"
        assert "abandoned by dev" in parts(mail)[0]
