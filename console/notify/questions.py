"""`question.created`: an email to each person who may answer a new question under its policy — and to
nobody else: a link or connect question only to its owner — and reminders once half its time is gone and
15 minutes before it expires, unless it was answered by then. Where the policy escalates, the people of
its escalation group who may answer it get `question.escalated` once it has waited that long (if it still
waits, and only before it expires). The message names the server, the tool, who asks for whom, the
server's message (untrusted: escaped, cut short), the policy in words, the time left and a link to the
question's page. The link opens the page; answering still needs sign-in there.

When each email goes is fixed when the question is asked (a notice due then, `notify_notice`); who gets
it, and at which address, is not: the notifier resolves them from the team's current members, their roles
and addresses when the notice comes due (`question_emails`), and the sender checks again before each
attempt (console/notify/sender.py). Someone removed from the team or no longer allowed to answer gets
nothing more; a changed address is used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.config import Settings
from console.db import utcnow
from console.identity.models import Membership, User
from console.notify.channels import channels_for
from console.notify.models import Delivery, Notice
from console.notify.render import (
    MAX_MESSAGE,
    MAX_NAME,
    Message,
    QuestionFacts,
    inert,
    question_message,
    slack_question,
    teams_question,
    time_left,
    webhook_question,
)
from console.notify.states import DeliveryStatus
from console.policies.rules import OWNER_ONLY_MODES, WHO_ANSWERS, Escalation, refusal

EVENT = "question.created"
REMINDER = "question.reminder"  # sent only while the question is still pending
ESCALATED = "question.escalated"  # likewise
WHILE_PENDING = (REMINDER, ESCALATED)
ASKING = (EVENT, *WHILE_PENDING)  # the emails asking people to answer
FINAL_REMINDER = timedelta(minutes=15)
MIN_REMINDER_GAP = timedelta(minutes=1)


@dataclass(frozen=True)
class AskedQuestion:
    """What a notification says of a question (the caller reads it off the question and its call)."""

    id: str
    call_id: str
    team_id: str
    owner_id: str
    mode: str
    message: str
    answerers: str
    no_self_approval: bool
    expires_at: datetime
    server: str
    target: str  # the tool (or method) the call is for
    escalation: Escalation | None = None


async def queue_question_created(
    *, session: AsyncSession, settings: Settings, question: AskedQuestion
) -> int:
    """Queue the notifications of a new question in the caller's transaction: the team's channels now, and
    with an SMTP server a notice for each email send (now, the reminders, the escalation), whose
    recipients are resolved when it comes due; how many deliveries and notices."""
    queued = await _queue_channels(session, settings, question)
    if settings.smtp_url is None:
        return queued
    now = utcnow()
    sends = planned_sends(question, now)
    for event, at in sends:
        session.add(Notice(event=event, subject_id=question.id, call_id=question.call_id, not_before=at))
    return queued + len(sends)


def planned_sends(question: AskedQuestion, now: datetime) -> list[tuple[str, datetime]]:
    """When the emails of a question asked `now` go: at once, at each reminder time, and at its escalation
    (if its policy escalates, and before it expires)."""
    sends = [(EVENT, now), *((REMINDER, at) for at in reminder_times(now, question.expires_at))]
    escalation = question.escalation
    if escalation is not None and question.mode not in OWNER_ONLY_MODES:
        at = now + timedelta(minutes=escalation.after_minutes)
        if at < question.expires_at:
            sends.append((ESCALATED, at))
    return sends


async def question_emails(
    *,
    session: AsyncSession,
    settings: Settings,
    question: AskedQuestion,
    event: str,
    at: datetime,
    now: datetime,
) -> list[Delivery]:
    """The emails of one send of `question` (`event`, planned for `at`), due `now`: to the team's members
    who may answer it with their current role (for an escalation, those of its group), who have an address
    and did not turn email off, each at the address they have now."""
    members = (
        await session.execute(
            select(User, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.team_id == question.team_id)
        )
    ).all()
    owner = next((user.name for user, _ in members if user.id == question.owner_id), "someone")
    people = [
        user
        for user, role in members
        if user.email
        and user.email_notifications
        and refusal(
            role=role,
            is_owner=user.id == question.owner_id,
            mode=question.mode,
            answerers=question.answerers,
            no_self_approval=question.no_self_approval,
        )
        is None
    ]
    if event == ESCALATED:
        group = question.escalation
        roles = {user.id: role for user, role in members}
        people = [
            u for u in people if group is not None and (u.name in group.users or roles[u.id] == group.role)
        ]
    message = question_message(
        server=question.server,
        target=question.target,
        owner=owner,
        text=question.message,
        policy=_policy_words(question),
        left=question.expires_at - at,
        link=_link(settings, question),
        kind=event,
    )
    give_up = now + timedelta(hours=settings.notify_give_up_hours)
    return [_email(question, user, message, event, now, give_up) for user in people]


def reminder_times(now: datetime, expires_at: datetime) -> list[datetime]:
    """When to remind of a question asked `now`: once half its time is gone, and 15 minutes before it
    expires — each only if it comes at least a minute after the one before."""
    times: list[datetime] = []
    for at in sorted((now + (expires_at - now) / 2, expires_at - FINAL_REMINDER)):
        if at - (times[-1] if times else now) >= MIN_REMINDER_GAP:
            times.append(at)
    return times


async def _queue_channels(session: AsyncSession, settings: Settings, question: AskedQuestion) -> int:
    if question.mode in OWNER_ONLY_MODES:  # the owner's alone: never to a whole team
        return 0
    channels = await channels_for(session, question.team_id, EVENT)
    if not channels:
        return 0
    owner = await session.get(User, question.owner_id)
    now = utcnow()
    facts = QuestionFacts(
        id=question.id,
        server=inert(question.server, MAX_NAME),
        target=inert(question.target, MAX_NAME),
        owner=inert(owner.name if owner is not None else "someone", MAX_NAME),
        mode=question.mode,
        text=inert(question.message, MAX_MESSAGE),
        policy=_policy_words(question),
        expires_at=question.expires_at.isoformat(),
        left=time_left(question.expires_at - now),
        link=_link(settings, question),
    )
    bodies = {
        "slack": slack_question(facts),
        "teams": teams_question(facts),
        "webhook": webhook_question(facts, now.isoformat()),
    }
    for channel in channels:
        session.add(
            Delivery(
                team_id=question.team_id,
                event=EVENT,
                subject_id=question.id,
                channel=channel.kind,
                recipient=channel.id,
                content_json=json.dumps({"body": bodies[channel.kind]}),
                status=DeliveryStatus.PENDING,
                attempts=0,
                not_before=now,
                give_up_at=now + timedelta(hours=settings.notify_give_up_hours),
            )
        )
    return len(channels)


def _link(settings: Settings, question: AskedQuestion) -> str:
    return f"{settings.base_url.rstrip('/')}/elicitations/{question.id}"


def _email(
    question: AskedQuestion, user: User, message: Message, event: str, at: datetime, give_up: datetime
) -> Delivery:
    assert user.email is not None  # noqa: S101  # readers have one
    return Delivery(
        team_id=question.team_id,
        event=event,
        subject_id=question.id,
        channel="email",
        user_id=user.id,
        recipient=user.email,
        content_json=json.dumps(message.as_dict()),
        status=DeliveryStatus.PENDING,
        attempts=0,
        not_before=at,
        give_up_at=give_up,
    )


def _policy_words(question: AskedQuestion) -> str:
    if question.mode in OWNER_ONLY_MODES:
        return "Only you can answer it: it is for your own account."
    words = WHO_ANSWERS.get(question.answerers, "")
    if question.no_self_approval:
        words += " The run's owner may not answer it."
    return words
