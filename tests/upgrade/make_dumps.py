"""Regenerates the databases the upgrade tests start from: made by the console of 2026-12-01 (commit
460c204, schema 0014), dumped as plain SQL, with the API tokens of the people in them.

Run from the repository root, in a clone that has that commit, with PostgreSQL reachable:

    CONSOLE_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python tests/upgrade/make_dumps.py

It unpacks the commit (`git archive`) into a temporary folder and runs `at_0014.py` there with this
project's virtualenv, the old code first on the import path, once on a new SQLite file and once on a new
PostgreSQL database; then it writes `schema_0014.sqlite.sql` (SQLite's `iterdump`),
`schema_0014.postgres.sql` (`pg_dump --no-owner --inserts`, plain text that one `execute` loads) and
`schema_0014.tokens.json` beside this file. PG_DUMP names the pg_dump to use when it is not on PATH.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from console.db import postgres_conninfo

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OLD_COMMIT = "460c204"
TIMEOUT = 300


def unpack(commit: str, into: Path) -> None:
    git = shutil.which("git")
    if git is None:
        raise SystemExit("git is needed to unpack the old commit")
    archive = subprocess.run([git, "archive", commit], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")


def leave_questions(old_tree: Path, database_url: str) -> dict[str, str]:
    """Run the old console's `at_0014.py` on `database_url`; the tokens it printed."""
    # `python` is this virtualenv's, for the old tree's MCP server too
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PYTHONPATH": str(old_tree), "PATH": path}
    done = subprocess.run(
        [sys.executable, str(HERE / "at_0014.py"), database_url],
        cwd=old_tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the old console failed:\n{done.stderr[-4000:]}")
    tokens: dict[str, str] = json.loads(done.stdout)
    return tokens


def sqlite_dump(old_tree: Path, folder: Path) -> dict[str, str]:
    path = folder / "old.db"
    tokens = leave_questions(old_tree, f"sqlite+aiosqlite:///{path}")
    connection = sqlite3.connect(path)
    try:
        (HERE / "schema_0014.sqlite.sql").write_text(
            "\n".join(connection.iterdump()) + "\n", encoding="utf-8"
        )
    finally:
        connection.close()
    return tokens


def postgres_dump(old_tree: Path, server_url: str) -> dict[str, str]:
    server = make_url(server_url).set(drivername="postgresql+psycopg")
    name = f"console_old_{secrets.token_hex(4)}"
    with psycopg.connect(postgres_conninfo(server_url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        database = server.set(database=name)
        tokens = leave_questions(old_tree, database.render_as_string(hide_password=False))
        pg_dump = os.environ.get("PG_DUMP") or shutil.which("pg_dump") or "pg_dump"
        dumped = subprocess.run(
            [pg_dump, "--no-owner", "--no-privileges", "--inserts", postgres_conninfo(str(database))],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        (HERE / "schema_0014.postgres.sql").write_text(dumped.stdout, encoding="utf-8")
        return tokens
    finally:
        with psycopg.connect(postgres_conninfo(server_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def main() -> None:
    server_url = os.environ.get("CONSOLE_TEST_POSTGRES_URL")
    if not server_url:
        raise SystemExit("set CONSOLE_TEST_POSTGRES_URL to a PostgreSQL server this may create databases on")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        old_tree = folder / "old"
        unpack(OLD_COMMIT, old_tree)
        tokens = {
            "sqlite": sqlite_dump(old_tree, folder),
            "postgres": postgres_dump(old_tree, server_url),
        }
    (HERE / "schema_0014.tokens.json").write_text(json.dumps(tokens, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
