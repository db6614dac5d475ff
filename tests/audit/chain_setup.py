"""Audit test helpers: chained events written with a signing key, and edits behind the console's back."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from sqlalchemy import Connection, create_engine, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import Actor, record_event
from console.audit.chain import SIGNER
from console.audit.signing import Signer, load_private_key, new_private_key_text
from console.db import create_engine as create_async_engine
from console.db import is_sqlite, session_factory
from console.migrate import sync_url

TRIGGERS = {"audit_event": "audit_event", "audit_checkpoint": "audit_checkpoint"}


def new_signer(every: int = 5) -> Signer:
    return Signer(load_private_key(new_private_key_text()), every=every, minutes=24 * 60)


@asynccontextmanager
async def event_writer(
    url: str, signer: Signer | None = None
) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on an engine of its own, as a console process has (signing checkpoints with `signer`)."""
    engine = create_async_engine(url)
    try:
        yield session_factory(engine, info={SIGNER: signer} if signer else None)
    finally:
        await engine.dispose()


async def write_event(factory: async_sessionmaker[AsyncSession], subject: str, n: int = 0) -> None:
    """One event about `subject`, in a transaction of its own, as the console writes them."""
    async with factory() as session:
        record_event(
            session=session,
            actor=Actor("user", "u1"),
            action="server_tested",
            subject_type="test",
            subject_id=subject,
            payload={"n": n, "note": "ünïcode"},
        )
        await session.commit()


async def write_events(url: str, signer: Signer | None, count: int, label: str = "e") -> None:
    """`count` events, one transaction each, as the console writes them."""
    async with event_writer(url, signer) as factory:
        for index in range(count):
            await write_event(factory, f"{label}{index}", index)


@contextmanager
def behind_the_back(url: str) -> Iterator[Connection]:
    """A connection on which the append-only triggers do not fire, as a database owner could arrange."""
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as connection:
            if is_sqlite(url):
                for table in TRIGGERS:
                    connection.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_update"))
                    connection.execute(text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
            else:
                connection.execute(text("SET LOCAL session_replication_role = replica"))
            yield connection
    finally:
        engine.dispose()


def rows(connection: Connection, table: str) -> list[dict[str, Any]]:
    result = connection.execute(text(f"SELECT * FROM {table} ORDER BY seq"))  # noqa: S608  # fixed names
    return [dict(row._mapping) for row in result]
