"""`question.created`: an email to each person who may answer a new question under its policy — and to
nobody else: a link or connect question only to its owner — and reminders to the same people once half
its time is gone and 15 minutes before it expires, unless it was answered by then. Where the policy
escalates, the people of its escalation group who may answer it get `question.escalated` once it has
waited that long (if it still waits, and only before it expires). The message names the
server, the tool, who asks for whom, the server's message (untrusted: escaped, cut short), the policy in
words, the time left and a link to the question's page. The link opens the page; answering still needs
sign-in there.
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
from console.notify.models import Delivery
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
from console.policies.rules import OWNER_ONLY_MODES, WHO_ANSWERS, Escalation, refusal

EVENT = "question.created"
REMINDER = "question.reminder"  # sent only while the question is still pending
ESCALATED = "question.escalated"  # likewise
WHILE_PENDING = (REMINDER, ESCALATED)
FINAL_REMINDER = timedelta(minutes=15)
MIN_REMINDER_GAP = timedelta(minutes=1)


@dataclass(frozen=True)
class AskedQuestion:
    """What a notification says of a new question (the caller reads it off the question it created)."""

    id: str
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
    """Queue the notifications of a new question in the caller's transaction: emails (with an SMTP server,
    to people with an address who did not turn email off) and the team's channels; how many."""
    queued = await _queue_channels(session, settings, question)
    if settings.smtp_url is None:
        return queued
    members = (
        await session.execute(
            select(User, Membership.role)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.team_id == question.team_id)
        )
    ).all()
    owner = next((user.name for user, _ in members if user.id == question.owner_id), "someone")
    readers = [
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
    if not readers:
        return queued
    now = utcnow()
    sends = [
        (EVENT, now, readers),
        *((REMINDER, at, readers) for at in reminder_times(now, question.expires_at)),
    ]
    escalation = question.escalation
    if escalation is not None and question.mode not in OWNER_ONLY_MODES:
        at = now + timedelta(minutes=escalation.after_minutes)
        roles = {user.id: role for user, role in members}
        group = [u for u in readers if u.name in escalation.users or roles[u.id] == escalation.role]
        if group and at < question.expires_at:
            sends.append((ESCALATED, at, group))
    for event, at, people in sends:
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
        give_up = at + timedelta(hours=settings.notify_give_up_hours)
        for user in people:
            session.add(_email(question, user, message, event, at, give_up))
        queued += len(people)
    return queued


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
                status="pending",
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
        status="pending",
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
