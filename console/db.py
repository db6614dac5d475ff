"""The declarative base, engines and session factories, for SQLite and PostgreSQL alike."""

from __future__ import annotations

import secrets
import time
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

from sqlalchemy import (
    ColumnDefault,
    ColumnElement,
    DateTime,
    Insert,
    MetaData,
    Table,
    bindparam,
    event,
    exists,
    insert,
    inspect,
    or_,
    select,
)
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

from console.errors import Conflict
from console.files import create_private
from console.inline_sqlite import DEFAULT_LOCK_WAIT, inline_dbapi
from console.transactions import end_read

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


M = TypeVar("M", bound=Base)


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every database (SQLite hands back naive values otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime given to a UtcDateTime column")
        return None if value is None else value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


async def get_row(session: AsyncSession, model: type[M], key: str, **options: Any) -> M:
    """`session.get` for a row that must exist (a foreign key guarantees it)."""
    row = await session.get(model, key, **options)
    if row is None:
        raise LookupError(f"{model.__name__} {key} vanished")
    return row


async def flush_unique(session: AsyncSession, message: str) -> None:
    """Flush; a unique constraint that refuses it becomes a Conflict with `message`, and the entry point's
    unit of work rolls back.

    Raises:
        Conflict.
    """
    try:
        await session.flush()
    except IntegrityError:
        raise Conflict(message) from None


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A 128-bit random id: unguessable, so ids in URLs leak nothing and cannot be enumerated."""
    return secrets.token_hex(16)


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def private_sqlite_file(url: str) -> None:
    """Create a SQLite database file that does not exist yet with mode 0600 (SQLite would make it 0644).

    SQLite gives its -wal and -shm files the database file's mode, so they stay private too.
    """
    if not is_sqlite(url):
        return
    database = make_url(url).database
    if database and database != ":memory:" and not database.startswith("file:"):
        path = Path(database)
        if path.parent.is_dir():
            create_private(path)


CLIENT_CHECK_MS = 1000


def postgres_conninfo(database_url: str) -> str:
    """The SQLAlchemy URL (`postgresql+psycopg://…`) as the libpq URI psycopg connects with."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


def create_engine(url: str, *, pool_size: int | None = None, **kwargs: Any) -> AsyncEngine:
    """An async engine; SQLite is called on the event loop's thread (console/inline_sqlite.py) and gets
    WAL and write-locking transactions. On PostgreSQL, a serving process passes `pool_size`: it then keeps
    at most that many connections and a transaction waits for a free one rather than open another (one-
    shot commands and tests take SQLAlchemy's pool, which opens up to 10 more and closes them after use).
    """
    if is_sqlite(url):
        private_sqlite_file(url)
        engine = create_async_engine(
            url,
            module=inline_dbapi(),
            connect_args={"timeout": DEFAULT_LOCK_WAIT},
            pool_size=1,
            max_overflow=0,
            pool_timeout=30,
            **kwargs,
        )
        _serialise_sqlite_writers(engine.sync_engine)
        return engine
    # A connection opened beyond the pool is a new PostgreSQL backend, closed again after one transaction,
    # and more transactions at once than a process's one core can drive only make them hold their locks
    # (the audit chain's head row) longer: measured, both cost more round trips per second than waiting.
    sized = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": 0}
    engine = create_async_engine(url, connect_args=_postgres_options(url), **sized, **kwargs)
    _ping_when_idle(engine.sync_engine)
    return engine


PING_AFTER_IDLE_SECONDS = 1.0
_RETURNED = "console_returned"  # pool record info key: when the connection went back to the pool


def _ping_when_idle(engine: Engine) -> None:
    # A pooled connection may have died while it sat idle (PostgreSQL restarted, a proxy closed it), so one
    # that has been idle a while is tried before use and replaced if it is dead, as `pool_pre_ping` would;
    # one back from work within the last second is used at once, sparing the hot path a round trip per
    # transaction. Should the server go away in that second, SQLAlchemy drops the whole pool at the first
    # failure, as it would for the requests that were in flight then.
    @event.listens_for(engine.pool, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_RETURNED] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_RETURNED)
        if returned is None or time.monotonic() - returned < PING_AFTER_IDLE_SECONDS:
            return  # new, or just used
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error:
            raise DisconnectionError("the connection died while it was idle") from None


def _postgres_options(url: str) -> dict[str, str]:
    # A process that dies while one of its transactions waits for a lock would keep what that transaction
    # locked (its dispatch jobs, say) until the wait ends, however long: PostgreSQL notices a vanished
    # client only when it next reads from it, or, with this check (PostgreSQL 14 and newer), within
    # CLIENT_CHECK_MS. So a dead process's work is taken over within its lease.
    given = make_url(url).query.get("options", "")
    check = f"-c client_connection_check_interval={CLIENT_CHECK_MS}"
    return {"options": f"{given if isinstance(given, str) else ' '.join(given)} {check}".strip()}


# On SQLite the driver is always in autocommit and transactions are begun by the hook below, which this
# option skips (reads_without_begin). SQLAlchemy's AUTOCOMMIT would do the same but, leaving it, sets
# `PRAGMA read_uncommitted`, which makes SQLite prepare every cached statement again: measured, that cost
# more than the lock saved.
NO_BEGIN = "console_no_begin"


def _serialise_sqlite_writers(engine: Engine) -> None:
    # SQLite upgrades a read lock to a write lock lazily and then fails with "database is locked"
    # instead of waiting; BEGIN IMMEDIATE takes the write lock up front so concurrent writers queue
    # (waiting for another process's lock is console/inline_sqlite.py's).
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        if not connection.get_execution_options().get(NO_BEGIN):
            connection.exec_driver_sql("BEGIN IMMEDIATE")


async def reads_without_begin(session: AsyncSession) -> None:
    """Run the session's statements until it next commits or rolls back without BEGIN and COMMIT
    (autocommit). Only for reads on the request path that end their transaction themselves, and
    single-statement writes. On PostgreSQL that is two round trips fewer; each statement in a transaction
    takes its own snapshot under READ COMMITTED too, so such reads see what they saw before. On SQLite the
    reads no longer take the write lock (BEGIN IMMEDIATE, above), so they neither wait for another
    process's writes nor hold up its writers; each statement reads its own snapshot (WAL). A no-op inside a
    transaction (a change to a row the session holds begins one)."""
    if session.in_transaction():
        return
    if session.get_bind().dialect.name == "sqlite":
        await session.connection(execution_options={NO_BEGIN: True})
    else:
        await session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


async def finds_any(session: AsyncSession, where: ColumnElement[bool]) -> bool:
    """Whether any row meets `where`, read without BEGIN and ended at once. For polls that mostly find
    nothing (the dispatcher's, its housekeeping's and the notifier's, in every process): one statement
    then, instead of a transaction, and on SQLite no write lock. What it finds is looked up again in the
    caller's transaction, with the same `where`."""
    await reads_without_begin(session)
    found = (await session.execute(select(exists().where(where)))).scalar()
    await end_read(session)
    return bool(found)


async def finds_any_of(session: AsyncSession, *wheres: ColumnElement[bool]) -> bool:
    """`finds_any` for polls that look in several tables: one statement, whether any of `wheres` meets
    a row."""
    await reads_without_begin(session)
    found = (await session.execute(select(or_(*(exists().where(where) for where in wheres))))).scalar()
    await end_read(session)
    return bool(found)


async def insert_rows(session: AsyncSession, *rows: DeclarativeBase) -> None:
    """Write new rows with plain INSERTs, in the session's transaction, instead of adding them to the
    session: on the hottest paths the unit of work costs more CPU than the statements. On PostgreSQL
    several rows go in one statement, one round trip (each but the last in a WITH, which PostgreSQL runs
    to completion; foreign keys are checked at the statement's end), in the order given. The objects get
    their columns' defaults, as a flush would give them, and stay outside the session: it does not track
    them (change them with statements, or load them)."""
    written = [_values_of(row) for row in rows]
    if len(written) > 1 and session.get_bind().dialect.name == "postgresql":
        parameters = {
            f"{key}_{i}": value for i, (_, values) in enumerate(written) for key, value in values.items()
        }
        await session.execute(
            _folded_insert(tuple((table, tuple(values)) for table, values in written)), parameters
        )
        return
    for table, values in written:
        await session.execute(_insert_into(table), values)


def _values_of(row: DeclarativeBase) -> tuple[Table, dict[str, Any]]:
    """The row's table and the values of its columns, with the defaults it was not given (which it gets
    too); a column left to the database's own default is left out."""
    table, columns = _columns_of(type(row))
    values: dict[str, Any] = {}
    for key, column, default, left_to_database in columns:
        if key in row.__dict__:
            values[column] = row.__dict__[key]
        elif default is not None:
            values[column] = default.arg(None) if default.is_callable else default.arg
            setattr(row, key, values[column])
        elif not left_to_database:
            values[column] = None
            setattr(row, key, None)
    return table, values


@cache
def _columns_of(
    model: type[DeclarativeBase],
) -> tuple[Table, tuple[tuple[str, str, ColumnDefault | None, bool], ...]]:
    """The model's table, and per column its attribute, its name, its default computed in Python and
    whether the database fills it in when it is left out (a default of its own or a SQL expression)."""
    mapper = inspect(model)
    columns = []
    for column in mapper.columns:
        default = column.default
        python_default = (
            default if isinstance(default, ColumnDefault) and not default.is_clause_element else None
        )
        left_to_database = python_default is None and (
            default is not None or column.server_default is not None
        )
        columns.append(
            (mapper.get_property_by_column(column).key, column.key, python_default, left_to_database)
        )
    return cast(Table, mapper.local_table), tuple(columns)


@cache
def _insert_into(table: Table) -> Insert:
    """One INSERT per table, built once: SQLAlchemy then finds its compiled form without building a key."""
    return insert(table)


@cache
def _folded_insert(shapes: tuple[tuple[Table, tuple[str, ...]], ...]) -> Insert:
    """One INSERT of a row into each table of `shapes` (with those columns), the first ones in a WITH;
    parameters `<column>_<i>`. Built once per shape."""
    *earlier, (table, columns) = shapes
    statement = insert(table).values({column: bindparam(f"{column}_{len(earlier)}") for column in columns})
    for i, (earlier_table, earlier_columns) in enumerate(earlier):
        values: dict[str, Any] = {column: bindparam(f"{column}_{i}") for column in earlier_columns}
        statement = statement.add_cte(insert(earlier_table).values(values).cte(f"inserted_{i}"))
    return statement


def session_factory(
    engine: AsyncEngine, *, info: dict[str, Any] | None = None
) -> async_sessionmaker[AsyncSession]:
    """Sessions on the engine; `info` is copied into each session (the audit signer travels there)."""
    return async_sessionmaker(engine, expire_on_commit=False, info=info)
