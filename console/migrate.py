"""Running the Alembic migrations from code (the CLI and the tests use this)."""

from __future__ import annotations

from functools import cache

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import make_url

from console.db import private_sqlite_file
from console.resources import MIGRATIONS


def sync_url(url: str) -> str:
    """The same database through a synchronous driver (Alembic runs synchronously)."""
    parsed = make_url(url)
    driver = {"sqlite+aiosqlite": "sqlite", "postgresql+asyncpg": "postgresql+psycopg"}.get(parsed.drivername)
    return parsed.set(drivername=driver).render_as_string(hide_password=False) if driver else url


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("file_template", "%%(year)d-%%(month).2d-%%(day).2d_%%(slug)s")
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str) -> None:
    """Bring the database to the newest schema."""
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
    """The newest schema revision this code knows."""
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()
