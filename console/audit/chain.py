"""Chaining events at commit, without making writers queue for each other.

`record_event` only remembers events on the session. This `before_commit` hook gives them their team,
server, tool, outcome and time, then tries to take the head row without waiting (`FOR UPDATE SKIP
LOCKED` on PostgreSQL) as the transaction's last lock. When it gets it, it appends the events to the chain
in the order they were recorded, after the events still waiting in `audit_pending`, and moves the head.
When another transaction holds the head, it waits for nothing: the events go to `audit_pending`, to be
chained by the next transaction that takes the head or by a sequencer (console/audit/sequencer.py), which
the commit wakes. So no request queues behind the head row, and under load one holder chains the events
of many transactions at once.

Only the head's holder appends to the chain or deletes from `audit_pending`, so the chain never forks and
no event is chained twice. A transaction that committed before another began has the smaller pending ids
and is visible to it, so it is chained first. Taking the head last and without waiting keeps lock order
acyclic. On SQLite every write transaction already holds the database's write lock (`BEGIN IMMEDIATE`,
console/db.py), so the head is always free there, and no event is ever left waiting: a process chains
after the head its own last commit left (`_append_after_known`), and moves the head only if it is still
that one, so reading the head costs no statement of its own. A rollback forgets the events recorded
before it.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import cache
from typing import Any, cast

from sqlalchemy import Connection, Engine, Table, bindparam, delete, event, exists, insert, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import Update

from console.audit.models import AuditCheckpoint, AuditEvent, AuditHead, AuditPending
from console.audit.records import chain_hash, checkpoint_message, event_content, timestamp
from console.audit.signing import Signer, signer_from
from console.audit.witness import Line, Witness
from console.canonical import Verbatim
from console.config import Settings
from console.db import utcnow

RECORDED = "audit_recorded"  # session.info key: this transaction's events, in the order they were recorded
CONTEXTS = "audit_contexts"  # session.info key: contexts found while the rows they come from were held
LEFT_WAITING = "audit_left_waiting"  # session.info key: this transaction left events in audit_pending
MOVED = "audit_moved_head"  # session.info key: SQLite: the head as this transaction left it, and its engine
SIGNER = "audit_signer"  # session.info key: the checkpoint Signer, when one is configured
WITNESS = "audit_witness"  # session.info key: the Witness file, when one is configured
WITNESSED = "audit_witnessed"  # session.info key: the witness's lines of the events this transaction chained
# session.info key: this transaction records a restore (console/calls/restored.py): the seq the
# restored chain shares with the witness, and the witness's lines are written before it commits.
RESTORED_TO = "audit_restored_to"
# session.info key: wait for the head row instead of leaving the events waiting, as every writer did
# before `audit_pending`; benchmark B7 measures both side by side.
WAIT_FOR_HEAD = "audit_wait_for_head"
BATCH = 500  # most waiting events a sequencer's transaction chains
WRITER_BATCH = 100  # most a writer's transaction chains before its own: it is on a request's path


@dataclass(frozen=True)
class EventContext:
    """What an auditor filters an event by, found from what it is about."""

    team_id: str | None
    server: str | None = None
    tool: str | None = None


ContextFinder = Callable[[Session, str], EventContext | None]
_FINDERS: dict[str, ContextFinder] = {}
_HOLDERS: dict[str, ContextFinder] = {}


def finds_context(kind: str) -> Callable[[ContextFinder], ContextFinder]:
    """Register how the layer that owns `kind` finds the context of events about one (by subject id; for
    "call", by the event's call id). The chain sits below those layers, so they tell it."""

    def register(finder: ContextFinder) -> ContextFinder:
        _FINDERS[kind] = finder
        return finder

    return register


def holds_context(kind: str) -> Callable[[ContextFinder], ContextFinder]:
    """Register how to find the context of events about a `kind` from the rows the session holds, without
    a query (None when it does not hold them): tried as each event is recorded, while the code that
    records it still holds those rows, for the session forgets rows nobody holds."""

    def register(finder: ContextFinder) -> ContextFinder:
        _HOLDERS[kind] = finder
        return finder

    return register


def session_info(settings: Settings) -> dict[str, object]:
    """What `session_factory(..., info=)` needs so commits write signed checkpoints and the witness."""
    info: dict[str, object] = {}
    if (signer := signer_from(settings)) is not None:
        info[SIGNER] = signer
    if settings.audit_witness_file:
        info[WITNESS] = Witness(settings.audit_witness_file)
    return info


def queue(session: Session, audit_event: AuditEvent) -> None:
    """Add the event to the session's transaction, with its context if the session holds what gives it
    (else it is looked up when the transaction commits)."""
    about = _about(audit_event)
    if about is not None and (holder := _HOLDERS.get(about[0])) is not None:
        contexts = session.info.setdefault(CONTEXTS, {})
        if about not in contexts and (held := holder(session, about[1])) is not None:
            contexts[about] = held
    session.info.setdefault(RECORDED, []).append(audit_event)


def knows_context(session: Session, kind: str, key: str, context: EventContext) -> None:
    """Give the context of this transaction's events about the `kind` `key`, for a caller that has it
    while the session holds no rows to find it from (they were written with plain statements)."""
    session.info.setdefault(CONTEXTS, {})[kind, key] = context


_ON_LEFT_WAITING: set[Callable[[], None]] = set()


def on_left_waiting(wake: Callable[[], None]) -> Callable[[], None]:
    """Call `wake` after each commit in this process that left events waiting; returns the undo."""
    _ON_LEFT_WAITING.add(wake)
    return lambda: _ON_LEFT_WAITING.discard(wake)


@event.listens_for(Session, "after_soft_rollback")
def _forget_pending(session: Session, _previous: Any) -> None:
    session.info.pop(RECORDED, None)
    session.info.pop(CONTEXTS, None)
    session.info.pop(LEFT_WAITING, None)
    session.info.pop(MOVED, None)
    session.info.pop(WITNESSED, None)
    session.info.pop(RESTORED_TO, None)


@event.listens_for(Session, "after_commit")
def _write_witness(session: Session) -> None:
    lines: list[Line] = session.info.pop(WITNESSED, [])
    witness: Witness | None = session.info.get(WITNESS)
    if witness is not None:
        witness.write(lines)


@event.listens_for(Session, "after_commit")
def _wake_sequencers(session: Session) -> None:
    if session.info.pop(LEFT_WAITING, False):
        for wake in list(_ON_LEFT_WAITING):
            wake()
    moved: tuple[Engine, Head] | None = session.info.pop(MOVED, None)
    if moved is not None:
        engine, head = moved
        _KNOWN_HEADS[engine] = head


@event.listens_for(Session, "before_commit")
def _chain_recorded(session: Session) -> None:
    recorded: list[AuditEvent] = session.info.pop(RECORDED, [])
    contexts: dict[tuple[str, str], EventContext | None] = session.info.pop(CONTEXTS, {})
    if not recorded:
        return
    session.flush()  # the change the events describe first, so their context can be looked up
    for audit_event in recorded:
        _fill_context(session, audit_event, contexts)
        audit_event.outcome = outcome_of(audit_event.action, audit_event.payload_json)
        audit_event.at = utcnow()
    # Plain statements, not the ORM's unit of work: this runs in every write transaction.
    connection = session.connection()
    on_sqlite = connection.dialect.name == "sqlite" and not session.info.get(WAIT_FOR_HEAD)
    if on_sqlite and _append_after_known(session, connection, recorded):
        return
    found = session.execute(_HEAD_WAITING if session.info.get(WAIT_FOR_HEAD) else HEAD_IF_FREE).one_or_none()
    if found is None:
        _leave_waiting(session, recorded)
        return
    head, behind = Head(*found[:-1]), bool(found[-1])
    earlier = take_waiting(session, WRITER_BATCH) if behind else []
    if len(earlier) == WRITER_BATCH:  # more may wait: these events must come after them
        _leave_waiting(session, recorded)
        append(session, head, earlier)
    else:
        append(session, head, [*earlier, *recorded])
        if on_sqlite:
            _known_once_committed(session, connection, head)


@event.listens_for(Session, "before_commit")
def _witness_restore_now(session: Session) -> None:
    """A transaction that records a restore writes the witness before it commits, while it holds the
    head: another process that checks the witness next sees the restore, and if the commit fails, the
    restore's lines name the calls it held, so the next check holds them again."""
    restored_to: int | None = session.info.pop(RESTORED_TO, None)
    witness: Witness | None = session.info.get(WITNESS)
    if restored_to is not None and witness is not None:
        witness.write(session.info.pop(WITNESSED, []), restored_to=restored_to)


# SQLite: the head each engine's last commit in this process left. Another process (or another engine on
# the same file) may have moved it since; `_append_after_known` finds that out from its UPDATE.
_KNOWN_HEADS: weakref.WeakKeyDictionary[Engine, Head] = weakref.WeakKeyDictionary()


def _append_after_known(session: Session, connection: Connection, events: Sequence[AuditEvent]) -> bool:
    """SQLite: chain `events` after the head this process's last commit left, moving the head only if
    it is still that one (this transaction holds the database's write lock, so it cannot move meanwhile);
    False, having written nothing, when it moved or a checkpoint is due: then read it.

    No event waits in `audit_pending` on SQLite (every writer finds the head free), so a head nobody
    moved has none behind it."""
    known = _KNOWN_HEADS.get(connection.engine)
    if known is None:
        return False
    head = replace(known)
    rows = _chained_rows(head, events)
    signer: Signer | None = session.info.get(SIGNER)
    if signer is not None and _checkpoint_due(head, signer):
        return False
    moved = connection.execute(
        _MOVE_HEAD_IF_AT, {"seq": head.seq, "hash": head.hash, "was_seq": known.seq, "was_hash": known.hash}
    )
    if moved.rowcount != 1:
        del _KNOWN_HEADS[connection.engine]
        return False
    connection.execute(_INSERT_EVENTS, rows)
    _witness_later(session, rows)
    _known_once_committed(session, connection, head)
    return True


def _witness_later(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Note the chained rows for the witness, when one is configured, to be written once they commit."""
    if WITNESS in session.info:
        lines = [Line(row["seq"], row["hash"], row["call_id"], row["action"]) for row in rows]
        session.info.setdefault(WITNESSED, []).extend(lines)


def _known_once_committed(session: Session, connection: Connection, head: Head) -> None:
    """SQLite: `head`, as this transaction moved it, is the engine's known head once it commits."""
    session.info[MOVED] = (connection.engine, head)


def _leave_waiting(session: Session, events: Sequence[AuditEvent]) -> None:
    session.execute(_INSERT_PENDING, [{c: getattr(e, c) for c in PENDING_COLUMNS} for e in events])
    session.info[LEFT_WAITING] = True


def take_waiting(session: Session, limit: int) -> list[AuditEvent]:
    """The oldest waiting events (up to `limit`), removed from `audit_pending`; the caller holds the head
    and chains them in this transaction."""
    oldest = select(_WAITING.c.id).order_by(_WAITING.c.id).limit(limit).scalar_subquery()
    taken = session.execute(delete(_WAITING).where(_WAITING.c.id.in_(oldest)).returning(*_WAITING.c)).all()
    rows = sorted(taken, key=lambda row: row.id)  # RETURNING keeps no order
    return [AuditEvent(**{c: getattr(row, c) for c in PENDING_COLUMNS}) for row in rows]


def append(session: Session, head: Head, events: Sequence[AuditEvent]) -> None:
    """Chain `events` after `head`, which this transaction holds, and move the head past them."""
    # Plain statements on the transaction's connection, not the ORM: this runs in every write transaction.
    connection = session.connection()
    rows = _chained_rows(head, events)
    _witness_later(session, rows)
    moved: dict[str, Any] = {"seq": head.seq, "hash": head.hash}
    signer: Signer | None = session.info.get(SIGNER)
    if signer is not None and _checkpoint_due(head, signer):
        _checkpoint(session, head, signer)
        moved.update(
            checkpoint_seq=head.checkpoint_seq,
            checkpoint_at=head.checkpoint_at,
            checkpoint_signature=head.checkpoint_signature,
        )
    elif connection.dialect.name == "postgresql" and len(rows) <= FOLDED_AT_MOST:
        parameters = {f"{column}_{i}": value for i, row in enumerate(rows) for column, value in row.items()}
        connection.execute(
            _folded_append(len(rows)), {**parameters, "head_seq": head.seq, "head_hash": head.hash}
        )
        return
    connection.execute(_INSERT_EVENTS, rows)
    connection.execute(_MOVE_HEAD, moved)


def _chained_rows(head: Head, events: Sequence[AuditEvent]) -> list[dict[str, Any]]:
    """Give `events` their places after `head` and their hashes, moving `head` past them; their rows."""
    rows: list[dict[str, Any]] = []
    for audit_event in events:
        head.seq += 1
        audit_event.seq = head.seq
        audit_event.prev_hash = head.hash
        content = event_content(audit_event)
        content["payload"] = Verbatim(audit_event.payload_json)  # record_event wrote it canonical
        audit_event.hash = chain_hash(head.hash, content)
        head.hash = audit_event.hash
        rows.append({column: getattr(audit_event, column) for column in EVENT_COLUMNS})
    return rows


@dataclass
class Head:
    seq: int
    hash: str
    checkpoint_seq: int
    checkpoint_at: datetime | None
    checkpoint_signature: str


_HEAD_COLUMNS = (
    AuditHead.seq,
    AuditHead.hash,
    AuditHead.checkpoint_seq,
    AuditHead.checkpoint_at,
    AuditHead.checkpoint_signature,
)
# The head when no other transaction holds it, and whether events wait: one statement, so taking the head
# costs one round trip. The check reads the statement's snapshot, which holds everything committed before
# this transaction began; anything committed later is concurrent with it and may be chained after it.
_HEAD_AND_BEHIND = select(*_HEAD_COLUMNS, exists(select(AuditPending.id)).label("behind")).where(
    AuditHead.id == 1
)
HEAD_IF_FREE = _HEAD_AND_BEHIND.with_for_update(skip_locked=True, of=AuditHead)
_HEAD_WAITING = _HEAD_AND_BEHIND.with_for_update(of=AuditHead)
_EVENTS, _HEAD, _CHECKPOINTS, _WAITING = (
    cast(Table, model.__table__) for model in (AuditEvent, AuditHead, AuditCheckpoint, AuditPending)
)
EVENT_COLUMNS = tuple(column.key for column in _EVENTS.columns)
PENDING_COLUMNS = tuple(column.key for column in _WAITING.columns if column.key != "id")
# Built once, as the head queries: these run in every write transaction.
_INSERT_EVENTS = insert(_EVENTS)
_INSERT_PENDING = insert(_WAITING)
_MOVE_HEAD = update(_HEAD).where(_HEAD.c.id == 1)  # SET: the keys of the parameters
# SET, too, the keys of the parameters that name columns: `was_seq` and `was_hash` name none.
_MOVE_HEAD_IF_AT = _MOVE_HEAD.where(
    _HEAD.c.seq == bindparam("was_seq"), _HEAD.c.hash == bindparam("was_hash")
)
FOLDED_AT_MOST = 4  # events; a request's transaction records one or two, a few more when others wait


@cache
def _folded_append(rows: int) -> Update:
    """On PostgreSQL, the INSERTs of a few events ride along in the head's UPDATE: one round trip
    (PostgreSQL runs each data-modifying WITH to completion although nothing reads it). Built once per
    number of rows, one single-row INSERT each and bound parameters only, so SQLAlchemy compiles it once
    (it compiles a multi-row VALUES every time)."""
    statement = _MOVE_HEAD.values(seq=bindparam("head_seq"), hash=bindparam("head_hash"))
    for i in range(rows):
        values: dict[str, Any] = {column: bindparam(f"{column}_{i}") for column in EVENT_COLUMNS}
        statement = statement.add_cte(insert(_EVENTS).values(values).cte(f"appended_{i}"))
    return statement


def _checkpoint_due(head: Head, signer: Signer) -> bool:
    if head.seq - head.checkpoint_seq >= signer.every:
        return True
    last = head.checkpoint_at
    return last is None or utcnow() - last >= timedelta(minutes=signer.minutes)


def _checkpoint(session: Session, head: Head, signer: Signer) -> None:
    """Sign the head as it now stands, and note that checkpoint on it."""
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
    head.checkpoint_seq, head.checkpoint_at, head.checkpoint_signature = head.seq, now, signature


def _fill_context(
    session: Session, audit_event: AuditEvent, found_before: dict[tuple[str, str], EventContext | None]
) -> None:
    """Team, server and tool of the event, from the call, server, token, run or team it is about (each
    looked up once per transaction)."""
    about = _about(audit_event)
    if about is None:
        audit_event.team_id = audit_event.team_id or audit_event.subject_id
        return
    kind, key = about
    if (kind, key) not in found_before:
        finder = _FINDERS.get(kind)
        found_before[kind, key] = None if finder is None else finder(session, key)
    found = found_before[kind, key]
    if found is not None:
        audit_event.team_id = audit_event.team_id or found.team_id
        audit_event.server, audit_event.tool = found.server, found.tool


def _about(audit_event: AuditEvent) -> tuple[str, str] | None:
    """What kind of thing, by id, the event's context comes from; None for an event about a team."""
    if audit_event.call_id is not None:
        return "call", audit_event.call_id
    if audit_event.subject_type == "team":
        return None
    return audit_event.subject_type, audit_event.subject_id


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
