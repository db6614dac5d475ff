"""The audit log: append-only (database triggers refuse UPDATE and DELETE) and hash-chained.

`audit_event` rows carry the SHA-256 of the previous row's hash plus their own canonical JSON, so an edit,
a deletion or a swap breaks the chain. `audit_head` is the one row locked by whoever appends to the chain;
`audit_checkpoint` rows sign the head now and then, so rewriting the whole chain shows too. Events recorded
while another transaction held the head wait in `audit_pending` until they are chained
(console/audit/chain.py). `audit_verified` remembers how far the audit page has verified the chain.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, utcnow

GENESIS = "0" * 64  # the previous hash of the first chained event


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
    # Where the event happened, filled in when it is chained; the audit page filters on these.
    team_id: Mapped[str | None] = mapped_column(String(32), index=True, default=None)
    server: Mapped[str | None] = mapped_column(String(100), default=None)
    tool: Mapped[str | None] = mapped_column(Text, default=None)
    outcome: Mapped[str | None] = mapped_column(String(20), default=None)  # accept, failed, refused...
    # NULL only for events written before the chain existed (migration 0006).
    prev_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    hash: Mapped[str | None] = mapped_column(String(64), default=None)


class AuditPending(Base):
    """An event recorded while the head was held elsewhere, not chained yet (no UPDATE; chaining deletes
    it in the transaction that appends it to `audit_event`). Ids grow in the order events were recorded."""

    __tablename__ = "audit_pending"

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    actor_type: Mapped[str] = mapped_column(String(10))
    actor_id: Mapped[str | None] = mapped_column(String(32))
    action: Mapped[str] = mapped_column(String(50))
    subject_type: Mapped[str] = mapped_column(String(20))
    subject_id: Mapped[str] = mapped_column(String(32))
    call_id: Mapped[str | None] = mapped_column(String(32))
    payload_json: Mapped[str] = mapped_column(Text)
    team_id: Mapped[str | None] = mapped_column(String(32))
    server: Mapped[str | None] = mapped_column(String(100))
    tool: Mapped[str | None] = mapped_column(Text)
    outcome: Mapped[str | None] = mapped_column(String(20))


class AuditHead(Base):
    """The single row (id 1) holding the newest chained event; locked by whoever appends to the chain."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    seq: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"))
    hash: Mapped[str] = mapped_column(String(64))
    checkpoint_seq: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), default=0)
    checkpoint_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    checkpoint_signature: Mapped[str] = mapped_column(String(100), default="")


class AuditCheckpoint(Base):
    """A signed statement that the chain's hash at `seq` was `hash` at time `at` (append-only)."""

    __tablename__ = "audit_checkpoint"

    seq: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False
    )
    hash: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    prev_signature: Mapped[str] = mapped_column(String(100))
    key_id: Mapped[str] = mapped_column(String(16))
    signature: Mapped[str] = mapped_column(String(100))


class AuditVerified(Base):
    """The single row (id 1): the chain was verified up to `seq`, whose hash was `hash`, and the last
    signed checkpoint up to there; the audit page verifies only what came after."""

    __tablename__ = "audit_verified"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    seq: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), default=0)
    hash: Mapped[str] = mapped_column(String(64), default=GENESIS)
    checkpoint_seq: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), default=0)
    checkpoint_signature: Mapped[str] = mapped_column(String(100), default="")
    verified_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
