"""Before console processes start on PostgreSQL: whether the server has room for the connections they
will hold. A process that finds none free fails its requests ("too many clients"), so an operator hears
of it when starting, not under load."""

from __future__ import annotations

from dataclasses import dataclass

from console.cli.common import complain
from console.config import Settings
from console.db import is_sqlite, postgres_conninfo
from console.dispatch.wakeups import WAKEUP_CONNECTIONS

# Counted by the server as its own (PostgreSQL 16 added `reserved_connections` for chosen roles).
_ROOM = """
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int
         + coalesce(current_setting('reserved_connections', true)::int, 0),
       (SELECT count(*) FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())
"""


@dataclass(frozen=True)
class Room:
    most: int  # max_connections
    reserved: int
    in_use: int  # by every client but this check

    @property
    def free(self) -> int:
        return max(0, self.most - self.reserved - self.in_use)


def room_on(database_url: str) -> Room | str:
    """The server's connections, or why it would not say (the check is advice: the command still starts)."""
    import psycopg  # here, not above: a console on SQLite never loads it

    try:
        with psycopg.connect(postgres_conninfo(database_url)) as connection:
            row = connection.execute(_ROOM).fetchone()
    except psycopg.Error as error:
        return (str(error).strip().splitlines() or [type(error).__name__])[0]
    assert row is not None  # noqa: S101  # a SELECT without FROM returns one row
    return Room(*row)


def warn_if_short_of_connections(settings: Settings, processes: int) -> None:
    """One line on stderr when `processes` console processes would need more connections than are free."""
    if is_sqlite(settings.database_url):
        return
    each = settings.database_pool_size + WAKEUP_CONNECTIONS
    room = room_on(settings.database_url)
    if isinstance(room, str):
        complain(f"warning: could not count PostgreSQL's free connections: {room}")
        return
    if processes * each <= room.free:
        return
    who = "1 console process" if processes == 1 else f"{processes} console processes"
    complain(
        f"warning: {who} × {each} PostgreSQL connections each (CONSOLE_DATABASE_POOL_SIZE "
        f"{settings.database_pool_size}, plus {WAKEUP_CONNECTIONS} for wake-ups) need {processes * each}, "
        f"but the server has {room.free} free (max_connections {room.most}, {room.reserved} reserved, "
        f"{room.in_use} in use); requests fail once none is free: lower --workers or "
        "CONSOLE_DATABASE_POOL_SIZE, or raise max_connections"
    )
