"""Alembic environment: migrates the database named by the console's settings (or -x url=...)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

import console.models
from console.migrate import MIGRATION_LOCK, sync_url

config = context.config
target_metadata = console.models.Base.metadata


def run_migrations() -> None:
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL given to the migrations")
    engine = create_engine(sync_url(url), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            # `console migrate` hears of each revision applied, to print it
            on_version_apply=config.attributes.get("on_version_apply"),
        )
        with context.begin_transaction():
            if connection.dialect.name == "postgresql":
                # A second `console migrate` at the same time waits here, then finds nothing left to do.
                connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            context.run_migrations()
    engine.dispose()


run_migrations()
