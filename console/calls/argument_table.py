"""A call's arguments as rows people read (name, value; nested values as indented rows), and an approver's
change to them as before/after rows of the same table, so that everyone who looks sees the same difference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

FOLD_CHARS = 120  # a value longer than this shows its start, with the whole value on demand
MAX_DEPTH = 6  # deeper values are shown as one line of text
MAX_ROWS = 300  # a larger value is cut with a last row saying how many rows were left out

Change = Literal["same", "changed", "added", "removed"]


@dataclass(frozen=True)
class ArgumentRow:
    path: str  # unique within the table: "config/replicas"
    name: str  # as shown, indented by `depth`
    depth: int
    value: str | None  # None for a row that heads nested rows (an object or a list of objects)
    full: str | None  # the whole value when `value` was cut
    before: str | None = None  # the agent's value, when an approver changed it
    change: Change = "same"


def argument_rows(sent: Any, approved: Any = None, *, edited: bool = False) -> list[ArgumentRow]:
    """The arguments the agent `sent`; with `edited`, the `approved` ones, each row marked as the same,
    changed (with the value before), added or removed."""
    before = dict(_flatten(sent))
    if not edited:
        return _cut(list(before.values()))
    after = dict(_flatten(approved))
    rows: list[ArgumentRow] = []
    for path, row in after.items():
        old = before.get(path)
        if old is None:
            rows.append(_with(row, change="added"))
        elif (old.value, old.full) != (row.value, row.full):
            rows.append(_with(row, change="changed", before=old.full or old.value))
        else:
            rows.append(row)
    rows += [_with(row, change="removed") for path, row in before.items() if path not in after]
    return _cut(rows)


def _with(row: ArgumentRow, *, change: Change, before: str | None = None) -> ArgumentRow:
    return ArgumentRow(row.path, row.name, row.depth, row.value, row.full, before, change)


def _flatten(value: Any, path: str = "", depth: int = 0) -> list[tuple[str, ArgumentRow]]:
    if not isinstance(value, dict):
        return []
    rows: list[tuple[str, ArgumentRow]] = []
    for key, item in value.items():
        rows += _rows(str(key), f"{path}/{key}", item, depth)
    return rows


def _rows(name: str, path: str, value: Any, depth: int) -> list[tuple[str, ArgumentRow]]:
    nested = (isinstance(value, dict) and bool(value)) or (
        isinstance(value, list) and any(isinstance(v, dict | list) for v in value)
    )
    if not nested or depth >= MAX_DEPTH:
        short, full = _fold(_text(value))
        return [(path, ArgumentRow(path, name, depth, short, full))]
    rows = [(path, ArgumentRow(path, name, depth, None, None))]
    if isinstance(value, dict):
        return rows + _flatten(value, path, depth + 1)
    for n, item in enumerate(value, start=1):
        rows += _rows(f"#{n}", f"{path}/{n}", item, depth + 1)
    return rows


def _text(value: Any) -> str:
    """A value on one line: strings as they are, lists of plain values separated by commas."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if value else "(empty text)"
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value) if value else "(empty list)"
    if isinstance(value, dict) and not value:
        return "(empty)"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)  # only past MAX_DEPTH


def _fold(text: str) -> tuple[str, str | None]:
    if len(text) <= FOLD_CHARS:
        return text, None
    return text[: FOLD_CHARS - 1] + "…", text


def _cut(rows: list[ArgumentRow]) -> list[ArgumentRow]:
    if len(rows) <= MAX_ROWS:
        return rows
    left = len(rows) - MAX_ROWS
    return [*rows[:MAX_ROWS], ArgumentRow("/…", f"{left} more rows not shown", 0, None, None)]
