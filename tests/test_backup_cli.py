"""`console backup` and `console audit verify` where there is nothing to back up or verify: one line,
exit status 1, and no empty database left behind."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from tests.test_cli import console, one_error_line


def test_audit_verify_without_a_database_refuses_and_creates_none(tmp_path: Path) -> None:
    missing = tmp_path / "console.db"
    done = console("audit", "verify", url=f"sqlite+aiosqlite:///{missing}", cwd=tmp_path)
    assert one_error_line(done) == (
        f"error: no database at {missing}: nothing to verify "
        "(set CONSOLE_DATABASE_URL to the console's database)"
    )
    assert not missing.exists()


def test_backup_copies_a_sqlite_database_and_refuses_to_overwrite_or_to_copy_what_is_missing(
    sqlite_url: str, tmp_path: Path
) -> None:
    copy = tmp_path / "backup.db"
    done = console("backup", str(copy), url=sqlite_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(copy)) as db:
        assert db.execute("SELECT count(*) FROM audit_head").fetchone() == (1,)
    assert copy.stat().st_mode & 0o777 == 0o600  # it holds what the database holds

    again = console("backup", str(copy), url=sqlite_url, cwd=tmp_path)
    assert one_error_line(again) == f"error: {copy} exists already; give a new file"
    missing = tmp_path / "nothing.db"
    refused = console("backup", str(tmp_path / "b.db"), url=f"sqlite+aiosqlite:///{missing}", cwd=tmp_path)
    assert "nothing to back up" in one_error_line(refused)
    assert not missing.exists()


def test_backup_of_postgresql_points_to_pg_dump(postgres_url: str, tmp_path: Path) -> None:
    done = console("backup", str(tmp_path / "b.db"), url=postgres_url, cwd=tmp_path)
    assert "back PostgreSQL up with pg_dump" in one_error_line(done)
