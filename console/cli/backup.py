"""`console backup`: a consistent copy of a SQLite database, taken while the console runs.

SQLite's `VACUUM INTO` reads the database in one transaction and writes a compact copy, with no -wal or
-shm file to go with it, so the copy is restored by putting it in the database's place. PostgreSQL's
backups are `pg_dump`'s (docs/operations/backup.md).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from console.cli.common import Subcommands, say
from console.config import Settings
from console.db import is_sqlite
from console.errors import ConsoleError
from console.files import create_private

LOCK_WAIT_SECONDS = 30.0  # how long the copy waits for a writer's lock before giving up


def add_backup_commands(sub: Subcommands) -> None:
    backup = sub.add_parser(
        "backup", help="copy the SQLite database consistently while the console runs (PostgreSQL: pg_dump)"
    )
    backup.add_argument("out", type=Path, help="the file to write; it must not exist yet")
    backup.set_defaults(handler=_backup)


def sqlite_database(url: str) -> Path | None:
    """The file of a SQLite database URL; None for another database, or one held in memory."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def existing_database(settings: Settings, doing: str) -> Path | None:
    """The SQLite database's file (None for another database); refused when it does not exist, since
    opening it would create an empty one.

    Raises:
        ConsoleError: naming the file.
    """
    if not is_sqlite(settings.database_url):
        return None
    path = sqlite_database(settings.database_url)
    if path is None or not path.is_file():
        where = "an in-memory database" if path is None else f"no database at {path}"
        raise ConsoleError(
            f"{where}: nothing to {doing} (set CONSOLE_DATABASE_URL to the console's database)"
        )
    return path


def _backup(settings: Settings, args: Any) -> int:
    source = existing_database(settings, "back up")
    if source is None:
        raise ConsoleError(
            "`console backup` copies SQLite databases; back PostgreSQL up with pg_dump "
            "(docs/operations/backup.md)"
        )
    out: Path = args.out
    if not out.parent.is_dir():
        raise ConsoleError(f"cannot write {out}: no folder {out.parent}")
    if not create_private(out) and out.stat().st_size > 0:
        raise ConsoleError(f"{out} exists already; give a new file")
    try:
        with closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=LOCK_WAIT_SECONDS)) as db:
            db.execute("VACUUM INTO ?", (str(out),))
    except sqlite3.Error as exc:
        out.unlink(missing_ok=True)
        raise ConsoleError(f"cannot back {source} up into {out}: {exc}") from None
    say(f"backed up {source} to {out} ({out.stat().st_size} bytes)")
    return 0
