"""Telling a database that cannot serve now from a mistake: the entry points answer the first with 503 and
`Retry-After`, since the same request is likely to succeed once the database is back or has room.

The drivers are told apart by what their errors carry (psycopg's `sqlstate`, sqlite3's
`sqlite_errorcode`), so this module imports neither.
"""

from __future__ import annotations

import sqlite3

from sqlalchemy.exc import DBAPIError, DisconnectionError, SQLAlchemyError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from console.errors import ConsoleError

RETRY_AFTER_SECONDS = 5  # what the answer asks a client to wait: about a pool's or a restart's wait

NO_CONNECTION = "the database cannot be reached now; nothing was changed, try again shortly"
NO_SLOT = "the database has no free connection now; nothing was changed, try again shortly"
NO_SPACE = "the database's disk is full; nothing was changed, try again once an operator freed space"
BUSY = "the database is busy now; nothing was changed, try again shortly"

# PostgreSQL's SQLSTATE classes and codes of a server that cannot serve now (Appendix A of its manual).
_POSTGRES_CLASSES = {"08": NO_CONNECTION, "57": NO_CONNECTION}  # connection exception, operator intervention
_POSTGRES_CODES = {"53100": NO_SPACE, "53200": BUSY, "53300": NO_SLOT, "53400": BUSY}
_NO_SLOT_WORDS = ("too many connections", "too many clients", "connection slots are reserved")
_SQLITE_CODES = {
    sqlite3.SQLITE_FULL: NO_SPACE,
    sqlite3.SQLITE_BUSY: BUSY,  # another process kept the write lock past the wait (inline_sqlite.py)
    sqlite3.SQLITE_LOCKED: BUSY,
    sqlite3.SQLITE_CANTOPEN: NO_CONNECTION,
    sqlite3.SQLITE_READONLY: NO_CONNECTION,  # e.g. its filesystem was remounted read-only
}


class DatabaseUnavailable(ConsoleError):
    """The database could not serve the request (down, out of connections or out of disk); the
    transaction was rolled back, so asking again later is safe."""

    code = "database_unavailable"
    retry_after = RETRY_AFTER_SECONDS


def unavailable(exc: BaseException) -> DatabaseUnavailable | None:
    """The outage `exc` (or, for a group, one of its exceptions) reports, or None for any other error."""
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = unavailable(inner)
            if found is not None:
                return found
        return None
    message = _reason(exc)
    return None if message is None else DatabaseUnavailable(message)


def _reason(exc: BaseException) -> str | None:
    if isinstance(exc, PoolTimeout):
        return NO_SLOT
    if isinstance(exc, DisconnectionError):
        return NO_CONNECTION
    if not isinstance(exc, SQLAlchemyError):
        return None
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return NO_CONNECTION
    orig = getattr(exc, "orig", None)
    errorcode = getattr(orig, "sqlite_errorcode", None)
    if isinstance(errorcode, int):
        return _SQLITE_CODES.get(errorcode & 0xFF)
    if orig is None or not hasattr(orig, "sqlstate"):
        return None
    sqlstate = orig.sqlstate
    if sqlstate is None:  # psycopg: no connection, or refused while connecting (the reason only in words)
        if type(orig).__name__ not in ("OperationalError", "InterfaceError"):
            return None
        said = str(orig)
        return NO_SLOT if any(words in said for words in _NO_SLOT_WORDS) else NO_CONNECTION
    return _POSTGRES_CODES.get(sqlstate) or _POSTGRES_CLASSES.get(sqlstate[:2])
