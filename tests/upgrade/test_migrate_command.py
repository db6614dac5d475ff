"""`console migrate` on PostgreSQL run twice at once (two operators, or two deploy jobs): the second waits
for the first and finds nothing left to do; and a migration the database refuses is told in one line,
with the revision the database stays at."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy.engine import make_url

from console.db import postgres_conninfo
from console.migrate import MIGRATION_LOCK, database_revision, head_revision
from tests.conftest import PostgresAdmin
from tests.harness import SECRET_KEY
from tests.upgrade.test_upgrade import COMMAND_TIMEOUT, console_command

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
WAITING_SECONDS = 60  # until both processes wait for the lock: each starts Python and imports the console


@pytest.fixture
def empty_postgres(postgres: PostgresAdmin | None) -> Iterator[str]:
    if postgres is None:
        if os.environ.get("CONSOLE_REQUIRE_POSTGRES"):
            pytest.fail("CONSOLE_TEST_POSTGRES_URL is not set but CONSOLE_REQUIRE_POSTGRES is")
        pytest.skip("set CONSOLE_TEST_POSTGRES_URL to run PostgreSQL tests")
    name = postgres.create(migrated=False)
    yield postgres.url_for(name)
    postgres.drop(name)


def _waiting_for_the_lock(connection: psycopg.Connection[tuple[int]], database: str) -> int:
    found = connection.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database "
        "WHERE l.locktype = 'advisory' AND NOT l.granted AND d.datname = %s",
        (database,),
    ).fetchone()
    return found[0] if found else 0


def test_two_migrate_runs_at_once_apply_each_migration_once(empty_postgres: str) -> None:
    database = make_url(empty_postgres).database or ""
    env = {**os.environ, "CONSOLE_DATABASE_URL": empty_postgres, "CONSOLE_SECRET_KEY": SECRET_KEY}
    command = [sys.executable, "-m", "console.cli", "migrate"]
    with psycopg.connect(postgres_conninfo(empty_postgres), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        runs = [
            subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        try:
            deadline = time.monotonic() + WAITING_SECONDS
            while _waiting_for_the_lock(holder, database) < 2:  # polls a condition, bounded
                assert time.monotonic() < deadline, "both runs should be waiting for the migration lock"
                assert all(run.poll() is None for run in runs), [run.communicate() for run in runs]
                time.sleep(0.1)
            holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            ended = [run.communicate(timeout=COMMAND_TIMEOUT) for run in runs]
        finally:
            for run in runs:
                if run.poll() is None:
                    run.kill()
                    run.wait(timeout=COMMAND_TIMEOUT)
    assert [run.returncode for run in runs] == [0, 0], ended
    last_lines = sorted(stdout.splitlines()[-1] for stdout, _ in ended)
    assert last_lines == ["database is up to date", f"database upgraded to {head_revision()}"]
    assert database_revision(empty_postgres) == head_revision()


def test_a_migration_the_database_refuses_is_told_in_one_line(empty_postgres: str) -> None:
    """A role that may not create tables (PostgreSQL 15 lets only the owner create in `public`)."""
    role = f"console_no_ddl_{secrets.token_hex(4)}"
    database = make_url(empty_postgres).database
    with psycopg.connect(postgres_conninfo(empty_postgres), autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{role}" LOGIN'.encode())
        admin.execute(f'REVOKE CREATE ON SCHEMA public FROM PUBLIC, "{role}"'.encode())
        try:
            as_role = make_url(empty_postgres).set(username=role).render_as_string(hide_password=False)
            done = console_command(as_role, "migrate")
        finally:
            admin.execute(f'DROP OWNED BY "{role}"'.encode())
            admin.execute(f'DROP ROLE "{role}"'.encode())
    assert done.returncode == 1, done
    [line] = done.stderr.splitlines()
    assert line.startswith(f"error: cannot migrate the database postgresql+psycopg://{role}@"), line
    assert f"/{database}: permission denied for schema public" in line
    assert line.endswith("; its schema revision stays none (no console tables)")
    assert database_revision(empty_postgres) is None
