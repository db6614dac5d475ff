"""Chaining events at commit: one head row, locked by the committing transaction as its last lock.

`record_event` only remembers events on the session; this `before_commit` hook adds them, in the order
they were recorded, with their place in the chain, just before the transaction's final flush. On
PostgreSQL the head row is read `FOR UPDATE`, so concurrent writers queue behind it until their
transaction ends and the chain never forks. Taking it at commit, after every other row lock of the
transaction, keeps lock order acyclic: a transaction that holds the head waits for nothing else. On
SQLite every write transaction already holds the database's write lock (`BEGIN IMMEDIATE`, console/db.py).
A rollback forgets the events recorded before it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, event, insert, select, update
from sqlalchemy.orm import Session

from console.audit.models import AuditCheckpoint, AuditEvent, AuditHead
from console.audit.records import chain_hash, checkpoint_message, event_content, timestamp
from console.audit.signing import Signer, signer_from
from console.canonical import Verbatim
from console.config import Settings
from console.db import utcnow

PENDING = "audit_pending"  # session.info key: events in the order they were recorded
SIGNER = "audit_signer"  # session.info key: the checkpoint Signer, when one is configured


@dataclass(frozen=True)
class EventContext:
    """What an auditor filters an event by, found from what it is about."""

    team_id: str | None
    server: str | None = None
    tool: str | None = None


ContextFinder = Callable[[Session, str], EventContext | None]
_FINDERS: dict[str, ContextFinder] = {}


def finds_context(kind: str) -> Callable[[ContextFinder], ContextFinder]:
    """Register how the layer that owns `kind` finds the context of events about one (by subject id; for
    "call", by the event's call id). The chain sits below those layers, so they tell it."""

    def register(finder: ContextFinder) -> ContextFinder:
        _FINDERS[kind] = finder
        return finder

    return register


def session_info(settings: Settings) -> dict[str, object]:
    """What `session_factory(..., info=)` needs so flushes write signed checkpoints."""
    signer = signer_from(settings)
    return {} if signer is None else {SIGNER: signer}


def queue(session: Session, audit_event: AuditEvent) -> None:
    session.info.setdefault(PENDING, []).append(audit_event)


@event.listens_for(Session, "after_soft_rollback")
def _forget_pending(session: Session, _previous: Any) -> None:
    session.info.pop(PENDING, None)


@event.listens_for(Session, "before_commit")
def _chain_pending(session: Session) -> None:
    waiting: list[AuditEvent] = session.info.pop(PENDING, [])
    if not waiting:
        return
    session.flush()  # the change the events describe first, so their context can be looked up
    # Plain statements on the transaction's connection, not the ORM: this runs in every write transaction.
    connection = session.connection()
    head = Head(*connection.execute(_HEAD_FOR_UPDATE).one())
    rows: list[dict[str, Any]] = []
    contexts: dict[tuple[str, str], EventContext | None] = {}
    for audit_event in waiting:
        _fill_context(session, audit_event, contexts)
        audit_event.outcome = outcome_of(audit_event.action, audit_event.payload_json)
        head.seq += 1
        audit_event.seq = head.seq
        audit_event.at = utcnow()
        audit_event.prev_hash = head.hash
        content = event_content(audit_event)
        content["payload"] = Verbatim(audit_event.payload_json)  # record_event wrote it canonical
        audit_event.hash = chain_hash(head.hash, content)
        head.hash = audit_event.hash
        rows.append({column: getattr(audit_event, column) for column in EVENT_COLUMNS})
    connection.execute(_INSERT_EVENTS, rows)
    moved: dict[str, Any] = {"seq": head.seq, "hash": head.hash}
    signer: Signer | None = session.info.get(SIGNER)
    if signer is not None and _checkpoint_due(head, signer):
        moved.update(_checkpoint(session, head, signer))
    connection.execute(_MOVE_HEAD, moved)


@dataclass
class Head:
    seq: int
    hash: str
    checkpoint_seq: int
    checkpoint_at: datetime | None
    checkpoint_signature: str


_HEAD_FOR_UPDATE = (
    select(
        AuditHead.seq,
        AuditHead.hash,
        AuditHead.checkpoint_seq,
        AuditHead.checkpoint_at,
        AuditHead.checkpoint_signature,
    )
    .where(AuditHead.id == 1)
    .with_for_update()
)
_EVENTS, _HEAD, _CHECKPOINTS = (
    cast(Table, model.__table__) for model in (AuditEvent, AuditHead, AuditCheckpoint)
)
EVENT_COLUMNS = tuple(column.key for column in _EVENTS.columns)
# Built once, as `_HEAD_FOR_UPDATE`: these run in every write transaction.
_INSERT_EVENTS = insert(_EVENTS)
_MOVE_HEAD = update(_HEAD).where(_HEAD.c.id == 1)  # SET: the keys of the parameters


def _checkpoint_due(head: Head, signer: Signer) -> bool:
    if head.seq - head.checkpoint_seq >= signer.every:
        return True
    last = head.checkpoint_at
    return last is None or utcnow() - last >= timedelta(minutes=signer.minutes)


def _checkpoint(session: Session, head: Head, signer: Signer) -> dict[str, Any]:
    """Sign the head as it now stands; what the head row keeps of that checkpoint."""
    now = utcnow()
    record = {
        "seq": head.seq,
        "hash": head.hash,
        "at": timestamp(now),
        "prev_signature": head.checkpoint_signature,
        "key_id": signer.key_id,
    }
    signature = signer.sign(checkpoint_message(record))
    session.execute(
        insert(_CHECKPOINTS).values(
            seq=head.seq,
            hash=head.hash,
            at=now,
            prev_signature=head.checkpoint_signature,
            key_id=signer.key_id,
            signature=signature,
        )
    )
    return {"checkpoint_seq": head.seq, "checkpoint_at": now, "checkpoint_signature": signature}


def _fill_context(
    session: Session, audit_event: AuditEvent, found_before: dict[tuple[str, str], EventContext | None]
) -> None:
    """Team, server and tool of the event, from the call, server, token, run or team it is about (each
    looked up once per transaction)."""
    if audit_event.call_id is not None:
        kind, key = "call", audit_event.call_id
    elif audit_event.subject_type == "team":
        audit_event.team_id = audit_event.team_id or audit_event.subject_id
        return
    else:
        kind, key = audit_event.subject_type, audit_event.subject_id
    if (kind, key) not in found_before:
        finder = _FINDERS.get(kind)
        found_before[kind, key] = None if finder is None else finder(session, key)
    found = found_before[kind, key]
    if found is not None:
        audit_event.team_id = audit_event.team_id or found.team_id
        audit_event.server, audit_event.tool = found.server, found.tool


OUTCOMES = {
    "call_completed": "completed",
    "call_failed": "failed",
    "call_interrupted": "interrupted",
    "call_abandoned": "abandoned",
    "question_expired": "expired",
    "access_refused": "refused",
    "sign_in_failed": "refused",
    "csrf_failed": "refused",
    "state_rejected_restart": "restarted",
}


def outcome_of(action: str, payload_json: str) -> str | None:
    """The result an auditor filters on: the answer given (accept, decline, cancel) or how a call ended."""
    if action in OUTCOMES:
        return OUTCOMES[action]
    if action in ("question_answered", "question_signed", "question_cosigned"):
        answer = json.loads(payload_json).get("action", "accept")
        return answer if isinstance(answer, str) else None
    return None
