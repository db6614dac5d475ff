"""The unit of work: the one place a transaction commits.

An entry point (a route, a gateway handler, a CLI command, a dispatcher or background loop) opens each
transaction with `transaction` and calls the use case in it; the code it calls writes in the session and
never commits or rolls back. The transaction commits when the block ends and rolls back when it raises,
unless the error was raised with `keep_only` or `keep_writes`: a refusal that must leave its record (an
audit event of the refused attempt) rolls back what was written before it and commits the record alone
(`keep_only`), or, raised before anything was written, commits what the transaction wrote, its record
(`keep_writes`); then the error reaches the entry point.

What must happen only once the change is durable (waking the dispatcher, handing it a resume, telling
waiters) is registered with `after_commit` and runs after the commit, in the order registered; a rollback
forgets it. The registry is the session's: SQLAlchemy's `after_commit` event marks the effects of each
commit as due, so an effect never runs for a transaction that did not commit.

An entry point that holds a session it did not open with `transaction` (a route's request-scoped
session) ends its unit with `commit`; the route's session commits a refusal's record (`commit_if_kept`).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

Effect = Callable[[], "Awaitable[object] | object"]
Record = Callable[[AsyncSession], None]  # writes the record of a refused attempt in the session
E = TypeVar("E", bound=BaseException)

_REGISTERED = "unit_after_commit"  # session.info key: effects of the transaction in progress
_DUE = "unit_due"  # session.info key: effects of a transaction that committed, not run yet
_KEPT = "unit_kept_error"  # session.info key: the error whose transaction commits before it is raised
_REFUSED = "unit_refused"  # session.info key: records of refused attempts, written as the unit ends

log = logging.getLogger(__name__)


def after_commit(session: AsyncSession | Session, effect: Effect) -> None:
    """Run `effect` once this transaction commits (not if it rolls back). It may be a coroutine
    function; `transaction` and `commit` await it."""
    session.info.setdefault(_REGISTERED, []).append(effect)


def keep_writes(session: AsyncSession, error: E) -> E:
    """`raise keep_writes(session, Forbidden(...))`: the transaction commits what it wrote (the record of
    a refused attempt) and runs its effects, then the error reaches the entry point."""
    session.info[_KEPT] = error
    return error


def keep_only(session: AsyncSession, error: E, record: Record) -> E:
    """`raise keep_only(session, NotFound(...), record)`: `record(session)` writes the record of a refused
    attempt as the unit ends. When the error ends it, the transaction rolls back whatever it wrote and
    commits the record alone, then the error reaches the entry point; unlike `keep_writes`, safe after
    writes. An entry point that handles the error writes the record with its next commit. `record` may
    run after a rollback, when the session's rows are expired: it must not read them (take their values
    before)."""
    session.info.setdefault(_REFUSED, []).append(record)
    return error


@asynccontextmanager
async def transaction(factory: async_sessionmaker[AsyncSession]) -> AsyncIterator[AsyncSession]:
    """One unit of work: a session whose transaction commits when the block ends, and whose
    `after_commit` effects then run; an error rolls it back (see `keep_only` and `keep_writes`)."""
    async with factory() as session:
        try:
            yield session
        except BaseException as error:
            await commit_if_kept(session, error)
            raise
        await commit(session)


async def commit(session: AsyncSession) -> None:
    """End the session's unit of work: commit (with the records of refused attempts, `keep_only`), then
    run the effects registered for it."""
    session.info.pop(_KEPT, None)
    for record in session.info.pop(_REFUSED, []):
        record(session)
    await session.commit()
    await run_due(session)


async def end_read(session: AsyncSession) -> None:
    """End a transaction that only read, so that a poll holds no connection (nor, on SQLite, a lock)
    while it waits: `db.finds_any` ends its one statement so."""
    await commit(session)


async def commit_if_kept(session: AsyncSession, error: BaseException) -> None:
    """For an entry point whose unit ends in `error`: commit the records of refused attempts alone, after
    a rollback (`keep_only`); or what the transaction wrote, when `error` was raised with `keep_writes`;
    else leave the writes for the rollback. A route's request-scoped session ends so
    (`web/deps.get_session`)."""
    kept = session.info.pop(_KEPT, None) is error
    if session.info.get(_REFUSED):
        await session.rollback()
        await commit(session)
    elif kept:
        await commit(session)


async def rollback(session: AsyncSession) -> None:
    """Abandon the session's unit of work (its effects with it), for an entry point that goes on with
    the same session after an error it handled; the records of refused attempts are written with its
    next commit."""
    session.info.pop(_KEPT, None)
    await session.rollback()


async def run_due(session: AsyncSession) -> None:
    """Run the effects of the transactions that committed, in the order registered; one that fails is
    logged and the rest still run: the change they follow is durable either way."""
    due: list[Effect] = session.info.pop(_DUE, [])
    for effect in due:
        try:
            result = effect()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("an effect after a commit failed")


@event.listens_for(Session, "after_commit")
def _due_once_committed(session: Session) -> None:
    registered: list[Effect] = session.info.pop(_REGISTERED, [])
    if registered:
        session.info.setdefault(_DUE, []).extend(registered)


@event.listens_for(Session, "after_soft_rollback")
def _forget_registered(session: Session, previous: Any) -> None:
    if not previous.nested:  # a savepoint's rollback leaves the transaction's effects due at its commit
        session.info.pop(_REGISTERED, None)
