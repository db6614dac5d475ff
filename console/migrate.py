"""Running the Alembic migrations from code (the CLI and the tests use this).

Alembic is imported only to migrate: a serving process, which only asks whether the schema is there and
which revision is the newest, is spared its 10 MiB."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import make_url

from console.db import private_sqlite_file
from console.resources import MIGRATIONS

if TYPE_CHECKING:
    from alembic.config import Config


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


def upgrade(url: str) -> None:
    """Bring the database to the newest schema."""
    from alembic import command

    private_sqlite_file(url)
    command.upgrade(alembic_config(url), "head")


def needs_schema(url: str) -> bool:
    """True when the database has no console tables yet (a fresh SQLite file, say)."""
    private_sqlite_file(url)
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as connection:
            return not inspect(connection).has_table("alembic_version")
    finally:
        engine.dispose()


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
