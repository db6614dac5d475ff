"""The audit witness: a file outside the database that remembers how far the chain went.

Every transaction that chains events appends one line per event once it has committed (`{"seq",
"hash", "call", "action"}`), so a database restored from an older backup is found out: its chain ends
before the witness's, or has another event where the witness has one. The lines whose event the
restored chain lacks name the calls that moved on since the backup (console/calls/restored.py holds
them for a person). The line of the event that records such a restore carries
`restored_to`: the witness forgets what it held after that seq, and follows the restored chain from
there. When a write fails (a full disk), the witness says so (`failure`), and once it writes again it
first appends `{"missed": [first, last]}`: whoever reads it then knows it cannot tell what happened
to those events' calls.
"""

from __future__ import annotations

import errno
import json
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from console.files import PRIVATE

logger = logging.getLogger(__name__)

TAIL_BYTES = 16 * 1024  # what a quick check reads from the end: about a hundred events' lines
# Per path, what the last write of this process that failed said (cleared by the next that succeeds).
_FAILURES: dict[str, str] = {}


@dataclass(frozen=True)
class Line:
    """One chained event as the witness holds it."""

    seq: int
    hash: str
    call: str | None
    action: str


class Witness:
    """Appends the events each transaction chained to the witness file, after it committed."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._missed: tuple[int, int] | None = None  # the seqs of the events failed writes left out

    def write(self, lines: Sequence[Line], *, restored_to: int | None = None) -> bool:
        """Append `lines` (the first with `restored_to` when given); False, having logged why, when the
        file cannot be written."""
        if not lines:
            return True
        text = "".join(self._texts(lines, restored_to))
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
            try:
                data = text.encode()
                if os.write(descriptor, data) != len(data):
                    raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}, written in part")
            finally:
                os.close(descriptor)
        except OSError as exc:
            first = lines[0].seq if self._missed is None else self._missed[0]
            self._missed = (first, max(lines[-1].seq, self._missed[1] if self._missed else 0))
            if str(self.path) not in _FAILURES:
                logger.error("cannot write the audit witness %s: %s", self.path, exc.strerror or exc)
            _FAILURES[str(self.path)] = (
                f"cannot write the audit witness {self.path} ({exc.strerror or exc}): "
                f"it misses the events from seq {self._missed[0]}"
            )
            return False
        self._missed = None
        _FAILURES.pop(str(self.path), None)
        return True

    def _texts(self, lines: Sequence[Line], restored_to: int | None) -> Iterator[str]:
        if self._missed is not None:  # after a newline: a failed write may have left part of a line
            yield "\n" + json.dumps({"missed": list(self._missed)}) + "\n"
        for i, line in enumerate(lines):
            record: dict[str, Any] = {"seq": line.seq, "hash": line.hash, "call": line.call}
            record["action"] = line.action
            if i == 0 and restored_to is not None:
                record["restored_to"] = restored_to
            yield json.dumps(record, separators=(",", ":")) + "\n"


def failure(path: str | Path) -> str | None:
    """Why this process's last write to the witness at `path` failed; None when it did not."""
    return _FAILURES.get(str(Path(path)))


@dataclass
class Record:
    """What the witness holds as of its latest restore: its lines, in the order they were written (a seq
    may come twice when a database restored without a console chained other events there), and the seqs
    it missed."""

    lines: list[Line] = field(default_factory=list)
    missed: list[tuple[int, int]] = field(default_factory=list)

    @property
    def last(self) -> Line | None:
        return max(self.lines, key=lambda line: line.seq, default=None)

    def missed_after(self, seq: int) -> bool:
        return any(last > seq for _first, last in self.missed)

    def take(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            if "missed" in record:
                first, last = record["missed"]
                self.missed.append((int(first), int(last)))
                continue
            restored_to = record.get("restored_to")
            if isinstance(restored_to, int):
                self.lines = [line for line in self.lines if line.seq <= restored_to]
                self.missed = [(a, min(b, restored_to)) for a, b in self.missed if a <= restored_to]
            self.lines.append(
                Line(int(record["seq"]), str(record["hash"]), record.get("call"), str(record["action"]))
            )


def read_whole(path: str | Path) -> Record | None:
    """Everything the witness holds; None when the file does not exist yet."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    record = Record()
    record.take(_parsed(data.splitlines()))
    return record


def read_tail(path: str | Path) -> Record | None:
    """What the end of the witness holds (its last `TAIL_BYTES`), enough to find its newest event."""
    try:
        with Path(path).open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TAIL_BYTES))
            data = file.read()
    except FileNotFoundError:
        return None
    lines = data.splitlines()
    if size > TAIL_BYTES and lines:
        lines = lines[1:]  # it starts inside a line
    record = Record()
    record.take(_parsed(lines))
    return record


def _parsed(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    for raw in lines:
        try:
            record = json.loads(raw)
        except ValueError:
            continue  # a line cut short by a full disk or a crash: the events after it still count
        if isinstance(record, dict) and ("missed" in record or "seq" in record):
            yield record
