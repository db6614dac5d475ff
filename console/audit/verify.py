"""Checking a chain of audit records: hashes, links, sequence numbers and checkpoint signatures.

The verifier reads records in sequence order (an event or an omitted event's stub, followed by the
checkpoint of the same sequence number, if any) and stops at the first problem, naming its sequence
number and what happened there. It trusts nothing in the records themselves: the public key comes from
the caller, and an export's own copy of it is only compared.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from console.audit.models import GENESIS
from console.audit.records import chain_hash, checkpoint_message, content_of
from console.audit.signing import key_id, signature_valid


@dataclass(frozen=True)
class Problem:
    seq: int
    kind: str  # edited | deleted | reordered | truncated | forged_checkpoint | rewritten | file_edited
    detail: str


@dataclass
class Report:
    problem: Problem | None = None
    events: int = 0
    omitted: int = 0
    redacted: int = 0
    legacy: int = 0
    last_seq: int | None = None
    head_hash: str | None = None
    checkpoints: int = 0
    signed_seq: int | None = None
    signed_at: str | None = None
    last_signature: str | None = None
    signatures_checked: bool = False
    waiting: int = 0  # events recorded but not chained yet (a database's `audit_pending`)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.problem is None

    def lines(self) -> list[str]:
        """A human summary, the first line saying OK or FAILED."""
        if self.problem is not None:
            head = f"FAILED at seq {self.problem.seq}: {self.problem.kind} — {self.problem.detail}"
        else:
            head = f"OK: chain verified up to seq {self.last_seq if self.last_seq is not None else 0}"
        out = [head, f"events checked: {self.events}"]
        if self.omitted:
            out.append(f"events outside the export (only their hash links checked): {self.omitted}")
        if self.redacted:
            out.append(
                "events shown without the query of a link an older version recorded whole "
                f"(only their hash links checked): {self.redacted}"
            )
        if self.legacy:
            out.append(f"events written before the chain existed (not protected): {self.legacy}")
        if self.signed_seq is not None:
            how = (
                "signatures checked" if self.signatures_checked else "signatures NOT checked (no public key)"
            )
            out.append(
                f"signed checkpoints: {self.checkpoints}, {how}; "
                f"latest covers seq {self.signed_seq} at {self.signed_at}"
            )
        else:
            out.append("signed checkpoints: none (no audit signing key, or none written yet)")
        if self.waiting:
            out.append(
                f"events recorded but not chained yet: {self.waiting} (the next writer or a sequencer "
                "chains them; until then they are not protected)"
            )
        return out + self.notes


@dataclass(frozen=True)
class Anchor:
    """A point the chain was verified up to: the last event's seq and hash, and the last signed
    checkpoint at or before it (seq 0 and an empty signature: none)."""

    seq: int
    hash: str
    checkpoint_seq: int = 0
    checkpoint_signature: str = ""


class ChainVerifier:
    """Feed records in order, then `finish()`; the report holds the first problem found."""

    def __init__(
        self, public_key: Ed25519PublicKey | None, *, from_genesis: bool = False, after: Anchor | None = None
    ) -> None:
        """`from_genesis`: the records are the whole chain (a database), not an export that may start
        later, anchored by the checkpoint before its first event. `after`: the records continue a chain
        verified up to there (they start at its seq + 1)."""
        self.report = Report(signatures_checked=public_key is not None)
        self._from_genesis = from_genesis
        self._key = public_key
        self._key_id = key_id(public_key) if public_key is not None else None
        self._queue: deque[dict[str, Any]] = deque()
        self._expected: str | None = None  # the hash the next event must link to
        self._last: int | None = None
        self._prev_signature: str | None = None
        self._started = False
        if after is not None:
            self._expected, self._last, self._started = after.hash, after.seq, True
            if after.checkpoint_signature:
                self._prev_signature = self.report.last_signature = after.checkpoint_signature
                self.report.signed_seq = after.checkpoint_seq

    def feed(self, record: dict[str, Any]) -> None:
        self._queue.append(record)
        self._drain(final=False)

    def finish(self) -> Report:
        self._drain(final=True)
        self.report.last_seq, self.report.head_hash = self._last, self._expected
        return self.report

    def fail(self, seq: int, kind: str, detail: str) -> None:
        if self.report.problem is None:
            self.report.problem = Problem(seq, kind, detail)

    def _drain(self, *, final: bool) -> None:
        while self._queue and self.report.problem is None:
            first = self._queue[0]
            if first.get("type") == "checkpoint":
                self._checkpoint(self._queue.popleft())
                continue
            following = [r for r in list(self._queue)[1:] if r.get("type") != "checkpoint"]
            if not following and not final:
                return
            self._event(self._queue.popleft(), following[0] if following else None)

    def _event(self, record: dict[str, Any], after: dict[str, Any] | None) -> None:
        seq = int(record["seq"])
        if record.get("hash") is None:
            if self._started:
                self.fail(seq, "edited", "its hash was removed")
            else:
                self.report.legacy += 1
                self._last = seq
            return
        if not self._started:
            self._started = True
            if self._expected is None:
                self._expected = GENESIS
        elif self._last is not None and seq != self._last + 1:
            if seq > self._last + 1:
                self.fail(self._last + 1, "deleted", f"events {self._last + 1} to {seq - 1} are missing")
            else:
                self.fail(seq, "reordered", f"seq {seq} comes after seq {self._last}")
            return
        if record.get("prev_hash") != self._expected:
            if after is not None and after.get("hash") == record.get("prev_hash"):
                self.fail(
                    seq, "reordered", f"this event was written after the one stored at seq {after['seq']}"
                )
            elif self._expected == GENESIS:
                self.fail(seq, "deleted", "the chain's first events are missing")
            else:
                self.fail(seq, "edited", "its link to the previous event does not match")
            return
        if record.get("type") == "event":
            if chain_hash(record["prev_hash"], content_of(record)) != record.get("hash"):
                self.fail(seq, "edited", "its content does not match its hash")
                return
            self.report.events += 1
        elif record.get("type") == "redacted":
            self.report.redacted += 1
        else:
            self.report.omitted += 1
        self._expected, self._last = record["hash"], seq

    def _checkpoint(self, record: dict[str, Any]) -> None:
        seq = int(record["seq"])
        if self._key is not None:
            if record.get("key_id") != self._key_id:
                self.fail(seq, "forged_checkpoint", f"signed by another key (key id {record.get('key_id')})")
                return
            if not signature_valid(self._key, checkpoint_message(record), str(record.get("signature"))):
                self.fail(seq, "forged_checkpoint", "its signature does not match")
                return
        if not self._started and self._from_genesis:
            first = (self._last or 0) + 1
            self.fail(first, "deleted", f"the chain's first events are missing (signed up to seq {seq})")
            return
        if not self._started and self._expected is None:
            # An export that starts after the chain's beginning is anchored by the checkpoint before it.
            self._expected, self._last, self._started = record["hash"], seq, True
        else:
            if self._last is None or seq > self._last:
                first = (self._last or 0) + 1
                self.fail(first, "truncated", f"the checkpoint at seq {seq} signs events from {first} on")
                return
            if record.get("hash") != self._expected:
                self.fail(seq, "rewritten", "the chain's hash here differs from the signed checkpoint's")
                return
            # Each checkpoint signs its predecessor's signature, so one that names another predecessor
            # than the last one seen (or any, when none was seen) had a signed checkpoint removed before it.
            if self._prev_signature is not None and record.get("prev_signature") != self._prev_signature:
                self.fail(seq, "deleted", "the signed checkpoint before this one is missing")
                return
            if self._prev_signature is None and self.report.checkpoints == 0 and record.get("prev_signature"):
                self.fail(seq, "deleted", "an earlier checkpoint is missing")
                return
        self._prev_signature = str(record.get("signature"))
        self.report.last_signature = self._prev_signature
        self.report.checkpoints += 1
        self.report.signed_seq, self.report.signed_at = seq, str(record.get("at"))
