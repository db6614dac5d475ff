"""Files the console creates that hold secrets (the SQLite database and its journal, the demo's secret and
audit key, `audit keygen --out`) are readable by the console's own user only."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from sqlalchemy import text

from console.audit.signing import load_private_key
from console.cli.demo import demo_audit_key, demo_secret
from console.db import create_engine
from tests.cli_runner import run_console


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """The common umask 022, under which files are created world-readable unless asked otherwise."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def console(*args: str, cwd: Path, url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONSOLE_DATABASE_URL": url}
    return run_console(args, env=env, cwd=cwd)


@pytest.mark.usefixtures("usual_umask")
def test_a_database_created_by_a_command_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    for command in (["migrate"], ["teams", "add", "platform"]):
        path = tmp_path / f"{command[0]}.db"
        done = console(*command, cwd=tmp_path, url=f"sqlite+aiosqlite:///{path}")
        assert done.returncode == 0, done.stderr
        assert mode(path) == "0o600"


@pytest.mark.usefixtures("usual_umask")
@pytest.mark.anyio
async def test_the_database_and_its_write_ahead_log_are_created_private(tmp_path: Path) -> None:
    path = tmp_path / "console.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with engine.begin() as connection:
            await connection.execute(text("CREATE TABLE note (body TEXT)"))
            await connection.execute(text("INSERT INTO note VALUES ('kept')"))
        # The engine still holds the database open, so its journal files are there.
        files = sorted([Path(p) async for p in anyio.Path(tmp_path).glob("console.db*")])
        assert [p.name for p in files] == ["console.db", "console.db-shm", "console.db-wal"]
        assert [mode(p) for p in files] == ["0o600"] * 3
    finally:
        await engine.dispose()


@pytest.mark.usefixtures("usual_umask")
def test_key_files_are_created_private(tmp_path: Path) -> None:
    secret = tmp_path / "console-demo.secret"
    assert len(demo_secret(secret).get_secret_value()) >= 32
    assert mode(secret) == "0o600"
    key = demo_audit_key(tmp_path / "console-demo-audit.key")
    assert key.read_text().strip()
    assert mode(key) == "0o600"
    out = tmp_path / "audit.key"
    done = console("audit", "keygen", "--out", str(out), cwd=tmp_path, url="sqlite+aiosqlite:///unused.db")
    assert done.returncode == 0, done.stderr
    assert mode(out) == "0o600"
    load_private_key(out.read_text().strip())  # raises unless it holds a key
    # Run again, the demo keeps its secret (and never rewrites the file).
    assert demo_secret(secret).get_secret_value() == secret.read_text()
