"""Email notifications of new questions, through a real SMTP server process (the demo's mailbox,
console/demo/mailbox.py: aiosmtpd): the people who may answer get one, nobody else does; what a server
wrote arrives inert; a server that is down gets retries with growing waits, then a visible failure, and
answering goes on.

The outbox is sent with `deliver_due(now=…)`, the clock the test drives; the last test lets the console's
own notifier send.
"""

from __future__ import annotations

import os
import re
import socket
from datetime import timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from sqlalchemy import select

from console.audit import SYSTEM
from console.calls.notices import still_pending
from console.db import create_engine, session_factory, utcnow
from console.identity.emails import set_email, set_email_notifications
from console.identity.models import User
from console.mcp.sealed import Outbound
from console.notify.mail import Mailer
from console.notify.models import Delivery
from console.notify.sender import FIRST_BACKOFF, Carriers, deliver_due
from console.transactions import transaction
from tests.harness import TEAM, Console, Mrtr, html, one, promote, running_console, seed, signed_in, text
from tests.notify.kept import Kept
from tests.notify.mail import (
    ADDRESSES,
    SENDER,
    deliveries,
    mail_settings,
    mailing,
    parts,
    received,
    send_due,
    with_addresses,
)
from tests.policies.setup import set_policy
from tests.processes import ServerProcess, console_process

pytestmark = pytest.mark.anyio

HOSTILE = '<script>alert("x")</script> <a href="https://evil.example">click</a>\x1b[31m'
URL = "https://connect.example.com/start?flow=abc"  # the link the URL question carries
WAIT_SECONDS = 20.0
LINK = re.compile(r"https?://[^\s<>\"')]+")


def about(message: EmailMessage, questions: dict[str, str]) -> str:
    """Which question the message links to."""
    text, _ = parts(message)
    [key] = [key for key, question_id in questions.items() if f"/elicitations/{question_id}" in text]
    return key


def closed_port() -> int:
    """A loopback port where nothing listens (it was bound for a moment and let go)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port: int = taken.getsockname()[1]
    return port


async def created(console: Console) -> list[Delivery]:
    """The deliveries announcing a question (not its reminders)."""
    return [d for d in await deliveries(console) if d.event == "question.created"]


async def test_the_people_who_may_answer_get_an_email_and_nobody_else(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        call = await console.call("mrtr", "form_and_url", {"message": HOSTILE})
        questions = {q["key"]: q["id"] for q in call["pending"]}
        assert await send_due(console) == 3

        mails = received(mailbox)
        by_question = {(to[0], about(m, questions)) for to, m in mails}
        # The form goes to its owner and the approvers who want email; the link only to its owner.
        assert by_question == {
            (ADDRESSES["dev"], "approve"),
            (ADDRESSES["lead"], "approve"),
            (ADDRESSES["dev"], "connect"),
        }
        for to, message in mails:
            assert message["From"] == SENDER
            assert message["To"] == to[0]
            assert message["Subject"] == "mrtr: a question for dev's call to form_and_url"
            text, markup = parts(message)
            assert "dev's agent calling form_and_url" in text
            assert "answering there needs you to be signed in" in text
            assert URL not in text + markup  # the page shows the link, never the email

        [connect] = [m for _, m in mails if about(m, questions) == "connect"]
        text, markup = parts(connect)
        assert "Only you can answer it" in text
        assert f"http://console.test/elicitations/{questions['connect']}" in text
        # The server's words arrive inert: no markup, no terminal escape.
        assert "<script>" not in markup and '<a href="https://evil' not in markup  # noqa: PT018
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in markup
        assert "\x1b" not in text + markup
        assert f'<a href="http://console.test/elicitations/{questions["connect"]}">' in markup

        assert await send_due(console) == 0  # each goes once
        assert {d.status for d in await deliveries(console) if d.event == "question.created"} == {"sent"}


async def test_a_server_that_is_down_gets_retries_with_growing_waits_then_a_visible_failure(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    port = closed_port()
    async with mailing(
        database_url, mrtr_memory, f"smtp://127.0.0.1:{port}", notify_give_up_hours=0.05
    ) as console:  # give up after three minutes
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})

        tried: list[tuple[int, str]] = []
        for seconds in (0, 10, 31, 60, 92, 150):
            assert await send_due(console, timedelta(seconds=seconds)) == 0
            [now] = [d for d in await created(console) if d.recipient == ADDRESSES["lead"]]
            tried.append((now.attempts, now.status))
        # Attempts at 0 s, 30 s later, then 60 s after that (10 s and 60 s find nothing due); the next wait,
        # 120 s, would end past the three minutes: given up.
        assert tried == [
            (1, "pending"),
            (1, "pending"),
            (2, "pending"),
            (2, "pending"),
            (3, "failed"),
            (3, "failed"),
        ]
        assert timedelta(seconds=30) == FIRST_BACKOFF
        failures = [
            p for p in await console.audit_payloads("notification_failed") if p["user"] == now.user_id
        ]
        assert [(p["event"], p["channel"], p["attempts"]) for p in failures] == [
            ("question.created", "email", 3)
        ]
        assert str(port) in failures[0]["error"]

        # Answering never waited on the mail.
        done = await console.answer_and_settle(call, "accept", {"name": "ada"})
        assert done["round"] == 2


async def test_team_admins_see_a_failed_delivery_and_send_it_again_and_others_cannot(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    port = closed_port()
    async with mailing(
        database_url, mrtr_memory, f"smtp://127.0.0.1:{port}", notify_give_up_hours=0.001
    ) as console:  # give up at the first failure
        await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        await send_due(console)
        [failed] = [d for d in await created(console) if d.recipient == ADDRESSES["lead"]]
        assert failed.status == "failed"
        page = f"/admin/teams/{TEAM}/notifications"
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            row = one(html(await admin.client.get(page)), f"#delivery-{failed.id}")
            assert text(one(row, "td[data-label=To]")) == "lead"
            assert str(port) in text(one(row, ".last-error"))
            assert ADDRESSES["lead"] not in str(row)  # the address stays on the person's account
            form = one(row, "form")
            for who in ("dev", "outsider"):  # a member; an approver of another team
                async with signed_in(console, who) as other:
                    assert (await other.client.get(page)).status_code == 403
                    tried = await other.client.post(str(form["action"]), data={"csrf_token": other.csrf})
                    assert tried.status_code == 403, tried.text
            [still] = [d for d in await deliveries(console) if d.id == failed.id]
            assert still.status == "failed"

            pressed = await admin.client.post(str(form["action"]), data={"csrf_token": admin.csrf})
            assert pressed.status_code == 303, pressed.text
            again = await admin.client.post(str(form["action"]), data={"csrf_token": admin.csrf})
            assert again.status_code == 409  # it is queued already
        # The mail server is back (here: at another address); the queued delivery goes out.
        working = Mailer(host="127.0.0.1", port=urlsplit(smtp.url).port or 0, tls=False, sender=SENDER)
        carriers = Carriers(working, Outbound.of(console.runtime.settings), still_pending)
        sent = await deliver_due(factory=console.runtime.factory, carriers=carriers, now=utcnow())
        assert sent >= 1
        assert ADDRESSES["lead"] in [to[0] for to, _ in received(mailbox)]
        resent = await console.audit_payloads("notification_resent")
        assert [p["event"] for p in resent] == ["question.created"]


async def test_the_console_sends_by_itself_when_a_question_arrives(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, **mail_settings(smtp.url)
    ) as console:
        await with_addresses(console)
        await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        with anyio.fail_after(WAIT_SECONDS):
            while len(received(mailbox)) < 2:  # dev (the owner) and lead
                await console.runtime.signals.wait_for_change(1.0)  # the notifier says when it sent
        assert sorted(to[0] for to, _ in received(mailbox)) == [ADDRESSES["dev"], ADDRESSES["lead"]]


async def test_a_gate_that_only_approvers_may_pass_is_mailed_to_the_approvers_alone(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        await set_policy(
            console, "tool", server="mrtr", tool="complete_now", gate=True, answerers="approvers"
        )
        call = await console.call("mrtr", "complete_now", {"x": "a"})
        [gate] = call["pending"]
        assert await send_due(console) == 1  # lead; lead2 turned email off; dev may not pass it
        [(to, message)] = received(mailbox)
        assert to == [ADDRESSES["lead"]]
        text, _ = parts(message)
        assert "Complete now a?" in text  # the gate's title: the call in words
        assert "Only the team's approvers may answer." in text
        assert f"/elicitations/{gate['id']}" in text


async def test_a_person_turns_their_email_off_on_their_page_and_gets_none(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        async with signed_in(console, "lead") as lead:
            page = html(await lead.client.get("/notifications"))
            assert text(one(page, "#email-address")) == ADDRESSES["lead"]
            assert one(page, "#notify-email").get("checked") is not None
            saved = await lead.client.post("/notifications", data={"csrf_token": lead.csrf})  # unchecked
            assert saved.status_code == 303, saved.text
            assert one(html(await lead.client.get("/notifications")), "#notify-email").get("checked") is None
        await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        assert await send_due(console) == 1
        assert [to for to, _ in received(mailbox)] == [[ADDRESSES["dev"]]]  # the owner only
        changed = await console.audit_payloads("email_notifications_set")
        assert changed == [{"user": "lead", "on": False, "via": "session"}]


async def test_reminders_go_at_half_time_and_fifteen_minutes_before_expiry_unless_answered(
    database_url: str, mrtr_memory: Mrtr, smtp: ServerProcess, mailbox: Kept
) -> None:
    async with mailing(database_url, mrtr_memory, smtp.url) as console:
        await set_policy(console, "team", expiry_minutes=60)
        first = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        second = await console.call("mrtr", "two_rounds", {"topic": "beta"})
        assert await send_due(console) == 4  # dev (the owner) and lead, for each question
        assert await send_due(console, timedelta(minutes=29)) == 0
        # dev turns email off: the rest of dev's stops
        async with transaction(console.runtime.factory) as session:
            dev = (await session.execute(select(User).where(User.name == "dev"))).scalar_one()
            await set_email_notifications(session=session, actor=SYSTEM, user_id=dev.id, on=False)

        assert await send_due(console, timedelta(minutes=30, seconds=5)) == 2  # lead's only
        reminders = received(mailbox)[4:]
        assert [to for to, _ in reminders] == [[ADDRESSES["lead"]]] * 2
        assert {m["Subject"] for _, m in reminders} == {
            "Reminder: mrtr: a question for dev's call to two_rounds"
        }
        text, _ = parts(reminders[0][1])
        assert text.startswith("Still waiting for an answer.")
        assert "Time left: 30 minutes." in text

        # Answered: the call's next round asks anew (waited for, so its own mails are in what follows).
        next_round = await console.answer_and_settle(first, "accept", {"name": "ada"})
        sent = await send_due(console, timedelta(minutes=45, seconds=5))
        later = [(to, parts(message)[0]) for to, message in received(mailbox)[6:]]

        def about(question: dict[str, Any]) -> list[tuple[list[str], str]]:
            link = f"/elicitations/{question['pending'][0]['id']}"
            return [(to, body) for to, body in later if link in body]

        assert about(first) == []
        [(to, last)] = about(second)
        assert to == [ADDRESSES["lead"]]
        assert "Time left: 15 minutes." in last
        assert about(next_round)  # the new question was mailed like any other
        assert sent == len(later) == 1 + len(about(next_round))
        asked = {first["pending"][0]["id"], second["pending"][0]["id"]}
        reminded = [
            d for d in await deliveries(console) if d.event == "question.reminder" and d.subject_id in asked
        ]
        # lead: both half-time reminders and the second question's last one. Nobody else was queued one:
        # who gets a reminder is decided when it is due, and by then dev had turned email off and the
        # first question was answered.
        assert sorted((d.recipient, d.status) for d in reminded) == [(ADDRESSES["lead"], "sent")] * 3


@pytest.mark.slow
async def test_console_serve_links_its_emails_to_the_address_it_listens_on_when_no_base_url_is_set(
    database_url: str, mrtr_stdio: Mrtr, smtp: ServerProcess, mailbox: Kept, tmp_path: Path
) -> None:
    tokens = await seed(database_url, {"mrtr": mrtr_stdio.spec})
    engine = create_engine(database_url)
    try:
        async with transaction(session_factory(engine)) as session:
            for name in ("dev", "lead"):
                await set_email(session=session, name=name, email=ADDRESSES[name])
            await session.commit()
    finally:
        await engine.dispose()
    mail = {"CONSOLE_SMTP_URL": smtp.url, "CONSOLE_MAIL_FROM": SENDER}
    with console_process(database_url, tmp_path / "console.txt", **mail) as base:
        assert "CONSOLE_BASE_URL" not in os.environ
        agent = {"Authorization": f"Bearer {tokens['dev']}"}
        async with httpx.AsyncClient(base_url=base, timeout=30, headers=agent) as api:
            run = await api.post("/api/v1/runs", json={"team": TEAM, "title": "mail links"})
            assert run.status_code == 201, run.text
            params = {"name": "two_rounds", "arguments": {"topic": "alpha"}}
            call = {"server": "mrtr", "method": "tools/call", "params": params}
            started = await api.post(f"/api/v1/runs/{run.json()['id']}/calls", params={"wait": 20}, json=call)
            assert started.json()["status"] == "awaiting_input", started.text
        with anyio.fail_after(WAIT_SECONDS):
            while len(received(mailbox)) < 2:  # noqa: ASYNC110  # dev (the owner) and lead
                await anyio.sleep(0.1)  # another process sends: its mail folder is read again
    links = {link for _, message in received(mailbox) for link in LINK.findall(parts(message)[0])}
    assert links, [parts(message)[0] for _, message in received(mailbox)]
    assert {urlsplit(link).netloc for link in links} == {urlsplit(base).netloc}, links
