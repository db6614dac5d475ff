"""Pending questions: one row per key of a round."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow


class Elicitation(Base):
    __tablename__ = "elicitation"
    __table_args__ = (
        Index("ix_elicitation_inbox", "status", "team_id", "created_at"),
        Index("ix_elicitation_decided", "team_id", "decided_at"),  # the Decided view, newest first
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    round_id: Mapped[str] = mapped_column(ForeignKey("call_round.id"), index=True)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"))
    owner_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    key: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(10))  # form | url
    message: Mapped[str] = mapped_column(Text)
    schema_json: Mapped[str | None] = mapped_column(Text, default=None)
    url: Mapped[str | None] = mapped_column(Text, default=None)
    request_digest: Mapped[str] = mapped_column(String(64))
    digest: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(
        String(20)
    )  # pending -> accepted|declined|cancelled|expired|superseded
    content_json: Mapped[str | None] = mapped_column(Text, default=None)
    decided_by: Mapped[str | None] = mapped_column(ForeignKey("identity_user.id"), default=None)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    reapplied_from: Mapped[str | None] = mapped_column(String(32), default=None)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The policy the question was asked under (see console/policies), fixed when it arrives.
    answerers: Mapped[str] = mapped_column(
        String(20), default="owner_or_approvers", server_default="owner_or_approvers"
    )
    no_self_approval: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    required_approvals: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    step_up_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    expiry_action: Mapped[str] = mapped_column(String(10), default="cancel", server_default="cancel")
    policy_json: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")  # which rules applied
    # With N-of-M approval the first accept fixes the content; co-signers sign this digest of it.
    content_digest: Mapped[str | None] = mapped_column(String(64), default=None)


class Signature(Base):
    """One approver's accept, co-sign or decline of a question that needs several approvers."""

    __tablename__ = "elicitation_signature"
    __table_args__ = (UniqueConstraint("elicitation_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    elicitation_id: Mapped[str] = mapped_column(ForeignKey("elicitation.id"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"))
    action: Mapped[str] = mapped_column(String(10))  # accept | decline | cancel
    content_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    via: Mapped[str | None] = mapped_column(String(60), default=None)
    signed_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
