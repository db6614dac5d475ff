"""The exact form of chained events and checkpoints: the dicts that are hashed, signed and exported."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from console.audit.models import AuditCheckpoint, AuditEvent
from console.canonical import canonical, loads

EVENT_FIELDS = (
    "seq",
    "at",
    "actor_type",
    "actor_id",
    "action",
    "subject_type",
    "subject_id",
    "call_id",
    "team_id",
    "server",
    "tool",
    "outcome",
    "payload",
)
CHECKPOINT_FIELDS = ("seq", "hash", "at", "prev_signature", "key_id")


def timestamp(moment: datetime) -> str:
    """UTC with microseconds and a Z, the one text form of a time in hashes and exports."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_content(event: AuditEvent) -> dict[str, Any]:
    """What an event's hash covers: every column but the hashes themselves."""
    return {
        "seq": event.seq,
        "at": timestamp(event.at),
        "actor_type": event.actor_type,
        "actor_id": event.actor_id,
        "action": event.action,
        "subject_type": event.subject_type,
        "subject_id": event.subject_id,
        "call_id": event.call_id,
        "team_id": event.team_id,
        "server": event.server,
        "tool": event.tool,
        "outcome": event.outcome,
        "payload": loads(event.payload_json),
    }


def event_record(event: AuditEvent) -> dict[str, Any]:
    return {"type": "event", **event_content(event), "prev_hash": event.prev_hash, "hash": event.hash}


def chain_hash(prev_hash: str, content: dict[str, Any]) -> str:
    """SHA-256 over the previous hash (hex) followed by the event's canonical JSON."""
    return hashlib.sha256((prev_hash + canonical(content)).encode("utf-8", "surrogatepass")).hexdigest()


def content_of(record: dict[str, Any]) -> dict[str, Any]:
    return {name: record.get(name) for name in EVENT_FIELDS}


def checkpoint_record(checkpoint: AuditCheckpoint) -> dict[str, Any]:
    return {
        "type": "checkpoint",
        "seq": checkpoint.seq,
        "hash": checkpoint.hash,
        "at": timestamp(checkpoint.at),
        "prev_signature": checkpoint.prev_signature,
        "key_id": checkpoint.key_id,
        "signature": checkpoint.signature,
    }


def checkpoint_message(record: dict[str, Any]) -> bytes:
    """The bytes a checkpoint's signature covers."""
    return canonical({"v": 1, **{name: record.get(name) for name in CHECKPOINT_FIELDS}}).encode()
