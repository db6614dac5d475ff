"""Turning notices (console/calls/notices.py) into deliveries, one per recipient, in one transaction per
batch; the notifier sends them (console/notify/sender.py).

Who is told what:
- `question.created`, `question.reminder`, `question.escalated` (notices due when each email goes): the
  people who may answer the question then, by email at their address then (console/notify/questions.py);
  a reminder or escalation of a question answered meanwhile goes to nobody.
- `call.completed`, `call.failed`, `call.interrupted`: the call's requester by email and the team's
  webhooks that subscribed, when the call asked people something or was interrupted; the call's agent
  when it gave a callback URL, with the call object as the API returns it.
- `call.input_required`: the call's agent only (the people who may answer get `question.created`).
- `question.answered`: the requester by email, unless they answered it themselves, and the team's webhooks
  that subscribed, unless it was a link or connect question (the owner's alone). Neither is told what
  was answered, only who decided what.
A notice is claimed by one process (its status moves from pending to expanded in the same transaction
that adds its deliveries), so each is fanned out exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call, Elicitation, Run, call_target
from console.calls.notices import ANSWERED, INPUT_REQUIRED, asked_question, may_answer, still_pending
from console.calls.objects import CallOut
from console.calls.states import CallStatus, QuestionStatus
from console.config import Settings
from console.db import finds_any
from console.identity.models import User
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.notify.channels import channels_for
from console.notify.mail import Mailer
from console.notify.models import Channel, Delivery, Notice
from console.notify.questions import ASKING, WHILE_PENDING, question_emails
from console.notify.render import (
    MAX_MESSAGE,
    MAX_NAME,
    CallFacts,
    Message,
    answered_message,
    call_ended_message,
    call_facts_json,
    inert,
    webhook_event,
)
from console.notify.sender import Carriers
from console.notify.states import NOTICES, DeliveryStatus, NoticeStatus
from console.policies.rules import OWNER_ONLY_MODES

BATCH = 100


def carriers_for(settings: Settings) -> Carriers:
    """What the notifier needs to send the console's notifications under `settings`."""
    return Carriers(
        mailer=Mailer.of(settings),
        outbound=Outbound.of(settings),
        still_asked=still_pending,
        expand=partial(expand_notices, settings=settings),
        may_answer=may_answer,
    )


async def expand_notices(session: AsyncSession, now: datetime, *, settings: Settings) -> int:
    """Fan out the pending notices due at `now` (at most a batch) in the caller's transaction; how many."""
    due = (Notice.status == NoticeStatus.PENDING) & (Notice.not_before <= now)
    if not await finds_any(session, due):
        return 0
    notices = (
        (await session.execute(select(Notice).where(due).order_by(Notice.not_before).limit(BATCH)))
        .scalars()
        .all()
    )
    # Everything is read first; the claim and the inserts come last, just before the commit, so that
    # another process claiming the same notices waits on their rows as briefly as possible.
    batch = _Batch(session, await _calls_and_runs(session, {notice.call_id for notice in notices}))
    planned = {notice.id: await _deliveries(batch, settings, notice, now) for notice in notices}
    if not planned:
        return 0
    claimed = (
        (
            await session.execute(
                update(Notice)
                .where(Notice.id.in_(planned), NOTICES.may_become(NoticeStatus.EXPANDED, Notice.status))
                .values(status=NoticeStatus.EXPANDED)
                .returning(Notice.id)
            )
        )
        .scalars()
        .all()
    )
    for notice_id in claimed:  # another process may have claimed some meanwhile: they are its
        session.add_all(planned[notice_id])
    return len(claimed)


async def _calls_and_runs(session: AsyncSession, call_ids: set[str]) -> dict[str, tuple[Call, Run]]:
    if not call_ids:
        return {}
    rows = await session.execute(
        select(Call, Run).join(Run, Run.id == Call.run_id).where(Call.id.in_(call_ids))
    )
    return {call.id: (call, run) for call, run in rows.all()}


class _Batch:
    """What a batch of notices reads, each thing once: their calls and runs (loaded together) and the
    channels of each team and event."""

    def __init__(self, session: AsyncSession, calls: dict[str, tuple[Call, Run]]) -> None:
        self.session = session
        self.calls = calls
        self._channels: dict[tuple[str, str], list[Channel]] = {}

    async def channels(self, team_id: str, event: str) -> list[Channel]:
        if (team_id, event) not in self._channels:
            self._channels[team_id, event] = await channels_for(self.session, team_id, event)
        return self._channels[team_id, event]


async def _deliveries(batch: _Batch, settings: Settings, notice: Notice, now: datetime) -> list[Delivery]:
    found = batch.calls.get(notice.call_id)
    if found is None:
        return []
    if notice.event in ASKING:
        return await _question_emails(batch.session, settings, notice, found[0], now)
    call, run = found
    channels = await batch.channels(run.team_id, notice.event)
    callback_url = call.callback_url if notice.event != ANSWERED else None
    if settings.smtp_url is None and not channels and callback_url is None:
        return []  # nobody can be told: no mail is sent, no webhook wants it, no callback was given
    session = batch.session
    server = (await session.execute(select(McpServer.name).where(McpServer.id == call.server_id))).scalar()
    owner = await session.get(User, run.owner_id)
    base = settings.base_url.rstrip("/")
    facts = CallFacts(
        id=call.id,
        run_id=run.id,
        server=inert(server or "a server", MAX_NAME),
        target=inert(call_target(call.params_json) or call.method, MAX_NAME),
        owner=inert(owner.name if owner is not None else "someone", MAX_NAME),
        status=call.status,
        error=_error_text(call),
        link=f"{base}/runs/{run.id}",
    )
    give_up = now + timedelta(hours=settings.notify_give_up_hours)
    out: list[Delivery] = []

    def add(channel: str, recipient: str, content: Mapping[str, object], user_id: str | None = None) -> None:
        out.append(
            Delivery(
                team_id=run.team_id,
                event=notice.event,
                subject_id=notice.subject_id,
                channel=channel,
                user_id=user_id,
                recipient=recipient,
                content_json=json.dumps(content),
                status=DeliveryStatus.PENDING,
                attempts=0,
                not_before=now,
                give_up_at=give_up,
            )
        )

    def email(message: Message) -> None:
        if settings.smtp_url is not None and owner is not None and owner.email and owner.email_notifications:
            add("email", owner.email, message.as_dict(), owner.id)

    def webhooks(data: dict[str, object]) -> None:
        for channel in channels:
            add(channel.kind, channel.id, {"body": webhook_event(notice.event, now.isoformat(), data)})

    if notice.event == ANSWERED:
        question = await session.get(Elicitation, notice.subject_id)
        if question is None or question.decided_by is None:
            return []
        who = (await session.execute(select(User.name).where(User.id == question.decided_by))).scalar()
        who = inert(who or "someone", MAX_NAME)
        if question.decided_by != run.owner_id:
            email(answered_message(facts, who=who, status=question.status, question=question.message))
        if question.mode not in OWNER_ONLY_MODES:
            answered = {
                "id": question.id,
                "mode": question.mode,
                "status": question.status,
                "decided_by": who,
                "decided_at": question.decided_at.isoformat() if question.decided_at else None,
                "page": f"{base}/elicitations/{question.id}",
            }
            webhooks({"question": answered, "call": call_facts_json(facts)})
        return out
    if notice.event != INPUT_REQUIRED and (call.asked_people or call.status == CallStatus.INTERRUPTED):
        email(call_ended_message(facts))
        webhooks({"call": call_facts_json(facts)})
    if callback_url is not None:
        pending = (
            (
                await session.execute(
                    select(Elicitation)
                    .where(Elicitation.call_id == call.id, Elicitation.status == QuestionStatus.PENDING)
                    .order_by(Elicitation.created_at, Elicitation.key)
                )
            )
            .scalars()
            .all()
        )
        body = CallOut.of(call, server=server or "", pending=pending, base_url=base).model_dump(mode="json")
        envelope = webhook_event(notice.event, now.isoformat(), {"call": body})
        add("callback", callback_url, {"body": envelope, "token": call.callback_token_id}, run.owner_id)
    return out


async def _question_emails(
    session: AsyncSession, settings: Settings, notice: Notice, call: Call, now: datetime
) -> list[Delivery]:
    """One send of a question's emails, to whoever may answer it now; none for a reminder or escalation
    of a question no longer waiting."""
    question = await session.get(Elicitation, notice.subject_id)
    if settings.smtp_url is None or question is None:
        return []
    if notice.event in WHILE_PENDING and question.status != QuestionStatus.PENDING:
        return []
    server = (await session.execute(select(McpServer.name).where(McpServer.id == call.server_id))).scalar()
    return await question_emails(
        session=session,
        settings=settings,
        question=asked_question(question, call, server or "a server"),
        event=notice.event,
        at=notice.not_before,
        now=now,
    )


def _error_text(call: Call) -> str | None:
    if not call.error_json:
        return None
    error = json.loads(call.error_json)
    message = error.get("message") if isinstance(error, dict) else None
    return inert(str(message if message is not None else error), MAX_MESSAGE)
