"""Keeping a process's background loops going through database errors, and knowing whether they are.

Every loop a console process runs besides serving requests (the dispatcher's claimer and housekeeper, the
notifier, the audit sequencer) goes through `keep_going`: a database error (the server restarting or gone,
no connection free in the pool, a full disk) makes it wait, twice as long after each failure in a row up
to a bound, until the database answers again, and then it starts over. While it waits it is `Health`'s
trouble, and `/readyz` says the process is not ready. Any other error is one the loop cannot go on from:
it is recorded as the process's end, and whoever runs the process (`console serve`) ends it with a
non-zero exit, so that its supervisor starts another.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

log = logging.getLogger(__name__)

DATABASE_ERRORS = (SQLAlchemyError, OSError)  # SQLAlchemy wraps the driver's; OSError: a socket it did not
FIRST_WAIT_SECONDS = 0.25
LONGEST_WAIT_SECONDS = 10.0
# A loop that ran this long since it last started counts its next failure as the first of a new series.
RECOVERED_AFTER_SECONDS = 60.0
PROBE_SECONDS = 5.0  # for the database to answer `SELECT 1` before it counts as still unreachable


class Health:
    """What keeps this process's background loops from their work now, and whether one of them ended."""

    def __init__(self) -> None:
        self._troubles: dict[str, str] = {}
        self.ended = anyio.Event()
        self.ended_because: str | None = None

    def troubled(self, loop: str, reason: str) -> None:
        self._troubles[loop] = reason

    def recovered(self, loop: str) -> None:
        self._troubles.pop(loop, None)

    def end(self, loop: str, reason: str) -> None:
        """The loop cannot go on: the process should end."""
        self._troubles[loop] = f"stopped: {reason}"
        if self.ended_because is None:
            self.ended_because = f"{loop}: {reason}"
        self.ended.set()

    def troubles(self) -> dict[str, str]:
        """Each loop kept from its work now, with the reason."""
        return dict(self._troubles)


async def database_answers(factory: async_sessionmaker[AsyncSession]) -> bool:
    """Whether the database answers a trivial query within a few seconds."""
    with anyio.move_on_after(PROBE_SECONDS):
        try:
            async with factory() as session:
                await session.execute(text("SELECT 1"))
        except DATABASE_ERRORS:
            return False
        return True
    return False


def is_database_error(error: BaseException) -> bool:
    """Whether the error (or every error of a task group's) came from the database."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_database_error(inner) for inner in error.exceptions)
    return isinstance(error, DATABASE_ERRORS)


def wait_after(failures: int) -> float:
    """How long to wait after the `failures`-th database error in a row."""
    return float(min(FIRST_WAIT_SECONDS * 2 ** (failures - 1), LONGEST_WAIT_SECONDS))


async def keep_going(
    name: str,
    loop: Callable[[], Awaitable[None]],
    *,
    health: Health,
    factory: async_sessionmaker[AsyncSession],
) -> None:
    """Run `loop` until it returns or is cancelled, starting it again after each database error once the
    database answers (backing off meanwhile); any other error ends it and is recorded in `health`, then
    raised."""
    failures = 0
    while True:
        started = anyio.current_time()
        try:
            await loop()
            return
        except Exception as error:
            if not is_database_error(error):
                log.exception("%s stopped: the process cannot do its work without it", name)
                health.end(name, _one_line(error))
                raise
            if anyio.current_time() - started > RECOVERED_AFTER_SECONDS:
                failures = 0
            log.warning("%s: database error, backing off: %s", name, _one_line(error))
        while True:
            failures += 1
            wait = wait_after(failures)
            health.troubled(name, f"database error; trying again in {wait:g} s")
            await anyio.sleep(wait)
            if await database_answers(factory):
                break
        health.recovered(name)
        log.info("%s: the database answers again; going on", name)


def _one_line(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    first = str(error).strip().splitlines()
    return f"{type(error).__name__}: {first[0] if first else ''}"[:300]
