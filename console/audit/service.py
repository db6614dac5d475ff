"""Appending audit events; every state change of the console records one."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.actions import action_named
from console.audit.chain import queue
from console.audit.models import AuditEvent
from console.canonical import canonical, canonical_bytes
from console.transactions import keep_only

E = TypeVar("E", bound=BaseException)


@dataclass(frozen=True)
class Actor:
    """Who did something: a user (through a token or a browser session) or the console itself."""

    kind: Literal["user", "system"]
    id: str | None = None
    via: str | None = None  # e.g. "token:<token id>"


SYSTEM = Actor("system")


def record_event(
    *,
    session: AsyncSession,
    actor: Actor,
    action: str,
    subject_type: str,
    subject_id: str,
    call_id: str | None = None,
    team_id: str | None = None,
    payload: dict[str, Any] | None = None,
) -> None:
    """Add one event to the session's transaction; it is chained when flushed and commits with the change.

    Raises:
        UnknownAuditAction: `action` is not listed in console/audit/actions.py.
    """
    action_named(action)
    body = dict(payload or {})
    if actor.via:
        body["via"] = actor.via
    queue(
        session.sync_session,
        AuditEvent(
            actor_type=actor.kind,
            actor_id=actor.id,
            action=action,
            subject_type=subject_type,
            subject_id=subject_id,
            call_id=call_id,
            team_id=team_id,
            payload_json=canonical(body),
        ),
    )


def record_refusal(
    *,
    session: AsyncSession,
    error: E,
    actor: Actor,
    subject_type: str,
    subject_id: str,
    attempt: str,
    reason: str,
    call_id: str | None = None,
    team_id: str | None = None,
    **details: str | None,
) -> E:
    """`raise record_refusal(...)`: refuse a request with `error`, recording the attempt as `access_refused`;
    when the error ends the request, whatever it had begun is rolled back and only the record commits
    (`console.transactions.keep_only`). Never pass secrets or links."""
    payload = {"attempt": attempt[:40], "reason": reason, **details}

    def record(into: AsyncSession) -> None:
        record_event(
            session=into,
            actor=actor,
            action="access_refused",
            subject_type=subject_type,
            subject_id=subject_id,
            call_id=call_id,
            team_id=team_id,
            payload=payload,
        )

    return keep_only(session, error, record)


def fingerprint(secret_text: str) -> dict[str, Any]:
    """Length and SHA-256 of a value that must never be stored in the log itself (e.g. requestState)."""
    raw = secret_text.encode("utf-8", "surrogatepass")
    return {"len": len(secret_text), "sha256": hashlib.sha256(raw).hexdigest()}


def digest(value: Any) -> dict[str, Any]:
    """SHA-256 and size in bytes of a value's canonical JSON (RFC 8785), for what the log records without
    keeping (a server's result): whoever holds the value can compute both again."""
    raw = canonical_bytes(value)
    return {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw)}
