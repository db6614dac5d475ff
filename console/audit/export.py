"""Self-contained exports (JSONL or CSV) that `console audit verify --file` checks offline.

An export holds the selected events in full, a stub (seq and hashes only) for every other event between
them, and the signed checkpoints that anchor its first and last event, so the hash links can be followed
without the rest of the log. A selected event that an older version recorded with the whole of a URL-mode
link is a `redacted` copy instead: the link's origin and path and its SHA-256 (console/audit/links.py).
Every line is canonical JSON (for CSV: the `record` column), and a final `end` record carries the SHA-256
of everything before it, signed when the console has a signing key: an edit of any byte shows.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterable
from typing import Any, Literal

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from console.audit.signing import Signer, load_public_key, public_key_text, signature_valid
from console.audit.verify import ChainVerifier, Problem, Report
from console.canonical import NotCanonicalizable, canonical, loads

Format = Literal["jsonl", "csv"]
CSV_COLUMNS = (
    "type",
    "seq",
    "at",
    "actor",
    "action",
    "subject",
    "team",
    "server",
    "tool",
    "outcome",
    "record",
)
STUB_FIELDS = ("seq", "prev_hash", "hash")


def stub(record: dict[str, Any]) -> dict[str, Any]:
    """An event outside the export's filter: only what is needed to follow the chain past it."""
    return {"type": "omitted", **{name: record[name] for name in STUB_FIELDS}}


def redacted(record: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """A selected event that an older version recorded with a whole link, shown with `payload` instead.

    Its hash cannot be recomputed from what is shown, so verification follows only its links, as for
    a stub; the rest of the chain and the checkpoints around it are checked as usual.
    """
    return {**record, "type": "redacted", "payload": payload}


def render(records: Iterable[dict[str, Any]], fmt: Format, signer: Signer | None) -> bytes:
    """The export file: the records, then the `end` record sealing them."""
    body = _body(records, fmt)
    digest = hashlib.sha256(body.encode()).hexdigest()
    end: dict[str, Any] = {"type": "end", "sha256": digest}
    if signer is not None:
        end["key_id"] = signer.key_id
        end["signature"] = signer.sign(_end_message(digest))
    return (body + _line(end, fmt)).encode()


def _body(records: Iterable[dict[str, Any]], fmt: Format) -> str:
    body = "".join(_line(record, fmt) for record in records)
    return _csv_row(list(CSV_COLUMNS)) + body if fmt == "csv" else body


def _end_message(digest: str) -> bytes:
    return canonical({"v": 1, "export_sha256": digest}).encode()


def _line(record: dict[str, Any], fmt: Format) -> str:
    text = canonical(record)
    if fmt == "jsonl":
        return text + "\n"
    actor = f"{record.get('actor_type')}:{record.get('actor_id') or ''}" if record.get("actor_type") else ""
    subject = f"{record['subject_type']}:{record['subject_id']}" if record.get("subject_type") else ""
    cells = [record.get("type"), record.get("seq"), record.get("at"), actor, record.get("action"), subject]
    cells += [record.get(name) for name in ("team_id", "server", "tool", "outcome")]
    return _csv_row(["" if cell is None else str(cell) for cell in cells] + [text])


def _csv_row(cells: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    return out.getvalue()


def header(*, public_key: str | None, key_id: str | None, filters: dict[str, Any], at: str) -> dict[str, Any]:
    return {
        "type": "export",
        "version": 1,
        "public_key": public_key,
        "key_id": key_id,
        "filter": {k: v for k, v in filters.items() if v is not None},
        "exported_at": at,
    }


def _parse(data: bytes) -> tuple[Format, list[dict[str, Any]]]:
    text = data.decode("utf-8")
    if text.startswith("{"):
        return "jsonl", [loads(line) for line in text.split("\n")[:-1]]
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or tuple(rows[0]) != CSV_COLUMNS:
        raise ValueError("not an audit export (unknown header)")
    return "csv", [loads(row[-1]) for row in rows[1:]]


def verify_file(data: bytes, public_key: Ed25519PublicKey | None) -> Report:
    """Check an export offline: its bytes, its chain, its checkpoints and its seal."""
    try:
        fmt, records = _parse(data)
    except (ValueError, NotCanonicalizable, IndexError) as exc:
        report = Report()
        report.problem = _file_problem(f"unreadable: {exc}")
        return report
    report = Report()
    if not records or records[0].get("type") != "export" or records[-1].get("type") != "end":
        report.problem = _file_problem("it does not start with the export header and end with the seal")
        return report
    named = records[0].get("public_key")
    if public_key is None and isinstance(named, str):
        public_key = load_public_key(named)
        note = f"signatures checked against the key named in the file ({named}); compare it with yours"
    else:
        note = ""
    try:
        again = (_body(records[:-1], fmt) + _line(records[-1], fmt)).encode()
    except (NotCanonicalizable, KeyError, TypeError) as exc:
        report.problem = _file_problem(f"a record is malformed: {exc}")
        return report
    if data != again:
        line = data[: _first_difference(data, again)].count(b"\n") + 1
        report.problem = _file_problem(f"line {line} is not as the console wrote it")
        return report
    body_end = len(_body(records[:-1], fmt).encode())
    verifier = ChainVerifier(public_key)
    for record in records[1:-1]:
        verifier.feed(record)
    report = verifier.finish()
    if note:
        report.notes.append(note)
    if public_key is not None and isinstance(named, str) and named != public_key_text(public_key):
        report.notes.append("the file names a different public key than the one given")
    _check_seal(report, records[-1], data[:body_end], public_key)
    return report


def _check_seal(report: Report, end: dict[str, Any], body: bytes, key: Ed25519PublicKey | None) -> None:
    digest = hashlib.sha256(body).hexdigest()
    if report.problem is not None:
        return
    if end.get("sha256") != digest:
        report.problem = _file_problem("its content does not match the digest in its last line")
    elif key is not None and end.get("signature") is None:
        report.notes.append("the export itself is not signed (exported without a signing key)")
    elif key is not None and not signature_valid(key, _end_message(digest), str(end.get("signature"))):
        report.problem = _file_problem("the signature over the whole file does not match")


def _file_problem(detail: str) -> Problem:
    return Problem(0, "file_edited", detail)


def _first_difference(a: bytes, b: bytes) -> int:
    for index, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return index
    return min(len(a), len(b))
