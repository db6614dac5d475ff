"""Models and migrations cannot drift, on SQLite and PostgreSQL; the audit table refuses edits."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DatabaseError

from console.migrate import alembic_config, head_revision, newest_revision, sync_url, upgrade


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


def test_upgrading_revokes_the_live_tokens_of_people_no_longer_in_the_tokens_team(database_url: str) -> None:
    config = alembic_config(database_url)
    revision = ScriptDirectory.from_config(config).get_revision("0009")
    assert revision is not None
    assert isinstance(revision.down_revision, str)
    command.downgrade(config, revision.down_revision)
    engine = create_engine(sync_url(database_url))
    try:
        with engine.begin() as connection:
            connection.execute(
                text("INSERT INTO identity_team (id, name, created_at) VALUES ('t1', 'platform', :now)"),
                {"now": datetime.now(UTC)},
            )
            connection.execute(
                text("INSERT INTO identity_user (id, name, created_at) VALUES (:id, :id, :now)"),
                [{"id": "u1", "now": datetime.now(UTC)}, {"id": "u2", "now": datetime.now(UTC)}],
            )
            connection.execute(
                text(
                    "INSERT INTO identity_membership (id, user_id, team_id, role) "
                    "VALUES ('m1', 'u1', 't1', 'member')"
                )
            )
            for token, user in (("k1", "u1"), ("k2", "u2")):
                connection.execute(
                    text(
                        "INSERT INTO identity_api_token (id, user_id, team_id, name, token_hash, created_at) "
                        "VALUES (:id, :user, 't1', 'cli', :hash, :now)"
                    ),
                    {"id": token, "user": user, "hash": token * 32, "now": datetime.now(UTC)},
                )
        upgrade(database_url)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, revoked_at FROM identity_api_token ORDER BY id"))
            assert [(token, revoked is not None) for token, revoked in rows] == [("k1", False), ("k2", True)]
    finally:
        engine.dispose()


def test_the_newest_revision_read_from_the_files_is_alembics_head() -> None:
    assert head_revision() == ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def _migration(versions: Path, revision: str, down: str | tuple[str, ...] | None) -> None:
    text = f"revision: str = {revision!r}\ndown_revision: str | tuple[str, ...] | None = {down!r}\n"
    (versions / f"{revision}.py").write_text(text, encoding="utf-8")


def test_the_newest_revision_follows_merges_and_refuses_a_branch(tmp_path: Path) -> None:
    _migration(tmp_path, "a", None)
    _migration(tmp_path, "b", "a")
    _migration(tmp_path, "c", "a")
    with pytest.raises(LookupError, match=r"nothing follows \['b', 'c'\]"):
        newest_revision(tmp_path)
    _migration(tmp_path, "d", ("b", "c"))  # a merge of the two
    assert newest_revision(tmp_path) == "d"


def test_a_serving_process_does_not_load_alembic(tmp_path: Path) -> None:
    probe = (
        "import sys; from console.app import create_app; from console.migrate import head_revision; "
        "create_app(); head_revision(); print(sorted(m for m in sys.modules if m.startswith('alembic')))"
    )
    # In a folder of its own: the app's engine creates the default SQLite file in the working directory.
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, cwd=tmp_path
    )
    assert loaded.stdout.strip() == "[]"
