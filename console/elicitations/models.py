"""Pending questions: one row per key of a round."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow


class Elicitation(Base):
    __tablename__ = "elicitation"
    __table_args__ = (Index("ix_elicitation_inbox", "status", "team_id", "created_at"),)

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
