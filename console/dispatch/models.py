"""The outbox: one row per request the dispatcher must send to an MCP server."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow


class DispatchJob(Base):
    """`kind` is initial (first send), resume (a ready round) or restart (round 1 after rejected state).

    Status: ready -> claimed -> sending -> done; a `sending` row whose lease ran out was sent by a
    process that died before recording the outcome: it becomes `interrupted`, never resent silently.
    """

    __tablename__ = "dispatch_job"
    __table_args__ = (Index("ix_dispatch_job_due", "status", "not_before"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    round_id: Mapped[str | None] = mapped_column(ForeignKey("call_round.id"), unique=True, default=None)
    kind: Mapped[str] = mapped_column(String(10))
    restart_of: Mapped[str | None] = mapped_column(
        String(32), default=None
    )  # the round whose state was refused
    status: Mapped[str] = mapped_column(String(12))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    claimed_by: Mapped[str | None] = mapped_column(String(64), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
