"""The notification outbox: one row per message to one recipient over one channel, written in the
transaction that caused it and sent by the notifier (console/notify/sender.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow
from console.notify.states import DeliveryStatus, NoticeStatus


class Delivery(Base):
    """Status (a DeliveryStatus, moving as DELIVERIES allows): pending (due at `not_before`; each attempt
    pushes it later) -> sent, or failed once `give_up_at` passed, or dropped (a reminder of a question
    answered before it was due).
    `content_json` is the message as rendered when it was queued."""

    __tablename__ = "notify_delivery"
    __table_args__ = (Index("ix_notify_delivery_due", "status", "not_before"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    event: Mapped[str] = mapped_column(String(40))  # e.g. question.created
    subject_id: Mapped[str] = mapped_column(String(32))  # the question or call it is about
    channel: Mapped[str] = mapped_column(String(20))  # email | slack | teams | webhook | callback
    user_id: Mapped[str | None] = mapped_column(ForeignKey("identity_user.id"), default=None)
    recipient: Mapped[str] = mapped_column(Text)  # the address
    content_json: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(10), default=DeliveryStatus.PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    give_up_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Notice(Base):
    """Something people or agents may be told of (a call ended or needs input, a question was answered),
    written in the transaction that did it, or an email send of a question (asked, reminded, escalated),
    written when the question is asked and due at `not_before`. The notifier turns each into deliveries,
    one per recipient, on its first pass once it is due (console/calls/fanout.py says who gets what), so
    the request that caused it reads nothing more for it, and recipients are who they are then."""

    __tablename__ = "notify_notice"
    __table_args__ = (Index("ix_notify_notice_due", "status", "not_before"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    event: Mapped[str] = mapped_column(String(40))  # e.g. call.completed
    subject_id: Mapped[str] = mapped_column(String(32))  # the call, or the question answered
    call_id: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(10), default=NoticeStatus.PENDING)  # pending -> expanded
    not_before: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Channel(Base):
    """A team's chat or webhook channel. Its URL (a Slack or Teams webhook URL is itself a secret) and a
    webhook's signing secret are sealed, bound to the channel; `host` is what pages show."""

    __tablename__ = "notify_channel"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    kind: Mapped[str] = mapped_column(String(10))  # slack | teams | webhook
    sealed_url: Mapped[str] = mapped_column(Text)
    host: Mapped[str] = mapped_column(String(300))
    events_json: Mapped[str] = mapped_column(Text)
    sealed_secret: Mapped[str | None] = mapped_column(Text, default=None)  # a webhook's whsec_… secret
    internal: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
