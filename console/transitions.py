"""A table of the moves a row's status may make, and the two ways to make one: `move` on a loaded row,
`may_become` in an UPDATE's WHERE clause. Each stateful row of the console has one (console/calls/states.py,
console/notify/states.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, inspect

S = TypeVar("S", bound=StrEnum)


class IllegalMove(RuntimeError):
    """A change of a status its table does not allow: a bug, stopped before it is written."""


@dataclass(frozen=True)
class Moves(Generic[S]):
    """Where each state of a `what` may move; rows start in `start`, and states with no moves are final."""

    what: str
    start: S
    moves: Mapping[S, frozenset[S]]

    @property
    def final(self) -> frozenset[S]:
        return frozenset(status for status, after in self.moves.items() if not after)

    def may_move(self, old: str, new: S) -> bool:
        return new in self.moves.get(type(self.start)(old), frozenset())

    def sources_of(self, new: S) -> tuple[S, ...]:
        """The states a row may move to `new` from."""
        return tuple(status for status, after in self.moves.items() if new in after)

    def move(self, row: Any, new: S) -> None:
        """Set the row's `status` to `new`, checked against the status the row had when this session first
        moved it: what a transaction sets and changes again before it commits is never stored, so only the
        move it finally makes counts. A row not written yet may start anywhere.

        Raises:
            IllegalMove: the table does not let the row's stored status move to `new`.
        """
        stored = _stored_status(row)
        if stored is not None and not self.may_move(stored, new):
            raise IllegalMove(f"{self.what} {row.id} may not move from {stored} to {new}")
        row.status = new

    def may_become(self, new: S, status: Any) -> ColumnElement[bool]:
        """The condition an UPDATE that sets `status` (the column it writes) to `new` adds: the row is in a
        state that may move there."""
        condition: ColumnElement[bool] = status.in_(self.sources_of(new))
        return condition


def _stored_status(row: Any) -> str | None:
    """The row's status before the session first moved it: a flush in between (a query autoflushes)
    writes a status the transaction may still change, and only its last one is ever committed."""
    state = inspect(row)
    if state.transient or state.pending:
        return None
    before = ("status before", state.session_id)
    if before not in state.info:
        history = state.attrs.status.history
        stored = [*history.deleted, *history.unchanged]
        state.info[before] = str(stored[0]) if stored else None
    found: str | None = state.info[before]
    return found
