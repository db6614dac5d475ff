"""Models and migrations cannot drift, on SQLite and PostgreSQL; the audit table refuses edits."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DatabaseError

from console.migrate import alembic_config, sync_url, upgrade


def test_migrations_match_models_and_downgrade_cleanly(database_url: str) -> None:
    config = alembic_config(database_url)
    command.check(config)  # raises when autogenerate would find a difference
    command.downgrade(config, "base")
    upgrade(database_url)
    command.check(config)


def test_audit_events_cannot_be_updated_or_deleted(database_url: str) -> None:
    engine = create_engine(sync_url(database_url))
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO audit_event "
                    "(at, actor_type, action, subject_type, subject_id, payload_json) "
                    "VALUES (CURRENT_TIMESTAMP, 'system', 'probe', 'test', 'x', '{}')"
                )
            )
        for statement in ("UPDATE audit_event SET action = 'edited'", "DELETE FROM audit_event"):
            with pytest.raises(DatabaseError, match="append-only"), engine.begin() as connection:
                connection.execute(text(statement))
        with engine.connect() as connection:
            assert connection.execute(text("SELECT action FROM audit_event")).scalars().all() == ["probe"]
    finally:
        engine.dispose()
