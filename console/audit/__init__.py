"""The append-only audit log."""

from console.audit.service import SYSTEM, Actor, fingerprint, record_event

__all__ = ["SYSTEM", "Actor", "fingerprint", "record_event"]
