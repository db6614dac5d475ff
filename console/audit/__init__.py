"""The append-only, hash-chained audit log with signed checkpoints."""

from console.audit.service import SYSTEM, Actor, fingerprint, record_event, record_refusal
from console.audit.signing import session_info

__all__ = ["SYSTEM", "Actor", "fingerprint", "record_event", "record_refusal", "session_info"]
