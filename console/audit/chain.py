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
from datetime import timedelta
from typing import Any

from sqlalchemy import event, select
from sqlalchemy.orm import Session

from console.audit.models import AuditCheckpoint, AuditEvent, AuditHead
from console.audit.records import chain_hash, checkpoint_message, event_content, timestamp
from console.audit.signing import Signer
from console.db import utcnow

PENDING = "audit_pending"  # session.info key: events in the order they were recorded
SIGNER = "audit_signer"  # session.info key: the checkpoint Signer, when one is configured


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
    head = session.execute(
        select(AuditHead).where(AuditHead.id == 1).with_for_update().execution_options(populate_existing=True)
    ).scalar_one()
    with session.no_autoflush:  # an event is written once, complete: the table refuses updates
        for audit_event in waiting:
            _fill_context(session, audit_event)
            audit_event.outcome = outcome_of(audit_event.action, audit_event.payload_json)
            head.seq += 1
            audit_event.seq = head.seq
            audit_event.at = utcnow()
            audit_event.prev_hash = head.hash
            audit_event.hash = chain_hash(head.hash, event_content(audit_event))
            head.hash = audit_event.hash
            session.add(audit_event)
        signer: Signer | None = session.info.get(SIGNER)
        if signer is not None and _checkpoint_due(head, signer):
            _checkpoint(session, head, signer)


def _checkpoint_due(head: AuditHead, signer: Signer) -> bool:
    if head.seq - head.checkpoint_seq >= signer.every:
        return True
    last = head.checkpoint_at
    return last is None or utcnow() - last >= timedelta(minutes=signer.minutes)


def _checkpoint(session: Session, head: AuditHead, signer: Signer) -> None:
    now = utcnow()
    record = {
        "seq": head.seq,
        "hash": head.hash,
        "at": timestamp(now),
        "prev_signature": head.checkpoint_signature,
        "key_id": signer.key_id,
    }
    signature = signer.sign(checkpoint_message(record))
    session.add(
        AuditCheckpoint(
            seq=head.seq,
            hash=head.hash,
            at=now,
            prev_signature=head.checkpoint_signature,
            key_id=signer.key_id,
            signature=signature,
        )
    )
    head.checkpoint_seq, head.checkpoint_at, head.checkpoint_signature = head.seq, now, signature


def _fill_context(session: Session, audit_event: AuditEvent) -> None:
    """Team, server and tool of the event, from the call, server, token or team it is about."""
    from console.calls.models import Call, Run
    from console.identity.models import ApiToken
    from console.mcp.models import McpServer

    if audit_event.call_id is not None:
        call = _find(session, Call, audit_event.call_id)
        if call is not None:
            run = _find(session, Run, call.run_id)
            server = _find(session, McpServer, call.server_id)
            audit_event.team_id = audit_event.team_id or (run.team_id if run else None)
            audit_event.server = server.name if server else None
            audit_event.tool = _target(call.params_json)
        return
    kind, key = audit_event.subject_type, audit_event.subject_id
    if kind == "team":
        audit_event.team_id = audit_event.team_id or key
    elif kind == "server":
        found = _find(session, McpServer, key)
        if found is not None:
            audit_event.team_id, audit_event.server = found.team_id, found.name
    elif kind == "token":
        token = _find(session, ApiToken, key)
        audit_event.team_id = token.team_id if token else audit_event.team_id
    elif kind == "run":
        run = _find(session, Run, key)
        audit_event.team_id = run.team_id if run else audit_event.team_id


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


def _find(session: Session, model: Any, key: str) -> Any:
    for candidate in session.new:
        if isinstance(candidate, model) and getattr(candidate, "id", None) == key:
            return candidate
    return session.get(model, key)


def _target(params_json: str) -> str | None:
    """The tool or prompt name, or the resource URI, a call is about."""
    try:
        params = json.loads(params_json)
    except ValueError:
        return None
    if not isinstance(params, dict):
        return None
    target = params.get("name", params.get("uri"))
    return target[:500] if isinstance(target, str) else None
