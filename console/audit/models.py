"""The audit log: append-only (database triggers refuse UPDATE and DELETE)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, utcnow


class AuditEvent(Base):
    __tablename__ = "audit_event"

    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    actor_type: Mapped[str] = mapped_column(String(10))  # user | token | system
    actor_id: Mapped[str | None] = mapped_column(String(32), default=None)
    action: Mapped[str] = mapped_column(String(50), index=True)
    subject_type: Mapped[str] = mapped_column(String(20))
    subject_id: Mapped[str] = mapped_column(String(32), index=True)
    call_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    payload_json: Mapped[str] = mapped_column(Text, default="{}")
