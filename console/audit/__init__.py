"""The append-only, hash-chained audit log with signed checkpoints."""

from console.audit.chain import session_info
from console.audit.links import redact_input_requests
from console.audit.sequencer import Sequencer
from console.audit.service import SYSTEM, Actor, digest, fingerprint, record_event, record_refusal

__all__ = [
    "SYSTEM",
    "Actor",
    "Sequencer",
    "digest",
    "fingerprint",
    "record_event",
    "record_refusal",
    "redact_input_requests",
    "session_info",
]
