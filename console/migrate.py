"""Running the Alembic migrations from code (the CLI and the tests use this).

Alembic is imported only to migrate: a serving process, which only asks whether the schema is there and
which revision is the newest, is spared its 10 MiB."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from console.db import private_sqlite_file
from console.resources import MIGRATIONS

if TYPE_CHECKING:
    from alembic.config import Config

# The PostgreSQL advisory lock every upgrade holds for its transaction (in the migrated database only).
MIGRATION_LOCK = 0x636F6E736F6C65  # "console"


def sync_url(url: str) -> str:
    """The same database through a synchronous driver (Alembic runs synchronously)."""
    parsed = make_url(url)
    driver = {"sqlite+aiosqlite": "sqlite", "postgresql+asyncpg": "postgresql+psycopg"}.get(parsed.drivername)
    return parsed.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def alembic_config(url: str) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("file_template", "%%(year)d-%%(month).2d-%%(day).2d_%%(slug)s")
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


@dataclass(frozen=True)
class Applied:
    """One migration an upgrade ran: from `down` (None: an empty database) to `revision`, and what it does."""

    down: str | None
    revision: str
    what: str

    def __str__(self) -> str:
        return f"{self.down or 'empty'} \u2192 {self.revision}: {self.what}"


def upgrade(url: str) -> list[Applied]:
    """Bring the database to the newest schema; the migrations that ran, oldest first (none: it was)."""
    from alembic import command

    private_sqlite_file(url)
    applied: list[Applied] = []

    def record(*, step: Any, **_: Any) -> None:
        down = step.down_revision_ids[0] if step.down_revision_ids else None
        applied.append(Applied(down, step.up_revision_id, _first_sentence(step.up_revision.doc)))

    config = alembic_config(url)
    config.attributes["on_version_apply"] = record
    command.upgrade(config, "head")
    return applied


def _first_sentence(doc: str) -> str:
    joined = " ".join(doc.split())
    return re.split(r"(?<=\.) (?=[A-Z])", joined, maxsplit=1)[0]


def database_revision(url: str) -> str | None:
    """The schema revision the database is at; None when it has no console tables yet."""
    private_sqlite_file(url)
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return None
            found = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
            return str(found) if found is not None else None
    finally:
        engine.dispose()


def pending_revisions(current: str) -> list[str] | None:
    """The revisions this code would apply to a database at `current` (empty: it is at the newest);
    None when this code does not know `current` (a newer console migrated the database)."""
    downs = _down_revisions(MIGRATIONS / "versions")
    if current not in downs:
        return None
    head = head_revision()
    newer = _ancestry(downs, head) - _ancestry(downs, current) if head is not None else set()
    return sorted(newer)


def _ancestry(downs: dict[str, tuple[str, ...]], revision: str) -> set[str]:
    """`revision` and every revision before it."""
    seen: set[str] = set()
    todo = [revision]
    while todo:
        found = todo.pop()
        if found not in seen:
            seen.add(found)
            todo.extend(downs.get(found, ()))
    return seen


@cache
def _down_revisions(versions: Path) -> dict[str, tuple[str, ...]]:
    """The revisions each revision follows, read from the files."""
    found: dict[str, tuple[str, ...]] = {}
    for path in versions.glob("*.py"):
        names = _assigned(path)
        down = names.get("down_revision")
        found[names["revision"]] = (down,) if isinstance(down, str) else tuple(down or ())
    return found


@cache
def head_revision() -> str | None:
    """The newest schema revision this code knows, read from the migration files without Alembic."""
    return newest_revision(MIGRATIONS / "versions")


def newest_revision(versions: Path) -> str | None:
    """The revision no other revision in `versions` follows, from each file's `revision` and
    `down_revision` (a merge names several).

    Raises:
        LookupError: a file names no revision, or several revisions have no successor (a branch).
    """
    revisions: set[str] = set()
    followed: set[str] = set()
    for path in versions.glob("*.py"):
        names = _assigned(path)
        if not isinstance(names.get("revision"), str):
            raise LookupError(f"migration {path.name} names no revision")
        revisions.add(names["revision"])
        down = names.get("down_revision")
        followed.update([down] if isinstance(down, str) else down or ())
    heads = revisions - followed
    if len(heads) > 1:
        raise LookupError(f"the migrations branch: nothing follows {sorted(heads)}")
    return next(iter(heads), None)


def _assigned(path: Path) -> dict[str, Any]:
    """The module-level `revision` and `down_revision` of a migration file, read without running it."""
    found: dict[str, Any] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets: list[ast.expr]
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
                found[target.id] = ast.literal_eval(value)
    return found
