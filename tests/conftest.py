"""Shared fixtures: fresh SQLite and PostgreSQL databases, the app under test, and MCP server processes."""

from __future__ import annotations

import os
import queue
import secrets
import shutil
import sys
import threading
from collections.abc import Generator, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy.engine import make_url

from console.db import postgres_conninfo
from console.identity import passwords
from console.migrate import upgrade
from tests.harness import Mrtr, ServerSpec, memory_mrtr, stdio_mrtr
from tests.processes import ServerProcess, start_http_server
from tests.tracker import Tracker, start_tracker

REPO = Path(__file__).resolve().parent.parent
POSTGRES_ENV = "CONSOLE_TEST_POSTGRES_URL"
DROPS_BEHIND = 8  # test databases at most waiting to be dropped
DROP_WAIT = 60.0  # seconds one drop may take before the tests stop waiting for it


CONSOLE_LOG = "console.txt"  # where tests/site.py has `console serve` write its stderr
LOG_TAIL = 4000
# scrypt's cheapest cost: a hash at the production cost takes about 0.1 s of CPU, and most tests seed five
# people. The stored hash names its cost, so signing in checks it with the same code either way.
CHEAP_SCRYPT_N = 2**1


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test that ran `console serve` shows the end of what the console logged, which is often
    the only account of why a page or a call did not come."""
    report = yield
    tmp_path = getattr(item, "funcargs", {}).get("tmp_path")
    if report.failed and call.when == "call" and isinstance(tmp_path, Path):
        log = tmp_path / CONSOLE_LOG
        if log.is_file():
            report.sections.append(
                ("console's stderr (its end)", log.read_text(errors="replace")[-LOG_TAIL:])
            )
    return report


@pytest.fixture(autouse=True)
def cheap_password_hashing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Passwords hashed in this process cost little, except in tests marked `production_hashing`."""
    if request.node.get_closest_marker("production_hashing") is None:
        monkeypatch.setattr(passwords, "N", CHEAP_SCRYPT_N)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    """A fresh, migrated SQLite file, for what behaves the same on either database."""
    path = tmp_path / "console.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


class PostgresAdmin:
    """Creates throwaway databases on the server named by CONSOLE_TEST_POSTGRES_URL.

    A DROP DATABASE waits for a checkpoint (about a second on a loaded machine), so databases are dropped
    by a thread of their own while the next tests run; `close` waits until every one is gone.
    """

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self._url = parsed.set(drivername="postgresql+psycopg")
        self._dsn = postgres_conninfo(url)
        self.template = f"console_tpl_{secrets.token_hex(4)}"
        self._execute(f'CREATE DATABASE "{self.template}"')
        upgrade(self.url_for(self.template))
        # Bounded, so that a dropper falling behind makes the tests wait rather than fill the disk.
        self._to_drop: queue.Queue[str | None] = queue.Queue(maxsize=DROPS_BEHIND)
        self._drop_errors: list[str] = []
        self._dropper = threading.Thread(target=self._drop_queued, name="drop test databases", daemon=True)
        self._dropper.start()

    def url_for(self, database: str) -> str:
        return self._url.set(database=database).render_as_string(hide_password=False)

    def create(self, *, migrated: bool = True) -> str:
        """A new database: migrated to the newest schema, or (not `migrated`) empty."""
        name = f"console_t_{secrets.token_hex(6)}"
        template = self.template if migrated else "template0"
        self._execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return name

    def drop(self, name: str) -> None:
        """Drop the database soon (its connections are ended then); `close` waits for it."""
        self._to_drop.put(name, timeout=DROP_WAIT)

    def close(self) -> None:
        """Drop what is queued, then the template; fails naming any database that could not be dropped."""
        self._to_drop.put(None, timeout=DROP_WAIT)
        self._dropper.join(timeout=DROP_WAIT * DROPS_BEHIND)
        assert not self._dropper.is_alive(), "the queued test databases were not dropped in time"
        self._drop_now(self.template)
        assert not self._drop_errors, f"test databases not dropped: {self._drop_errors}"

    def _drop_queued(self) -> None:
        while (name := self._to_drop.get()) is not None:
            try:
                self._drop_now(name)
            except psycopg.Error as exc:
                self._drop_errors.append(f"{name}: {exc}")

    def _drop_now(self, name: str) -> None:
        self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _execute(self, sql: str) -> None:
        with psycopg.connect(self._dsn, autocommit=True) as connection:
            connection.execute(sql.encode())


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresAdmin | None]:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        yield None
        return
    admin = PostgresAdmin(url)
    yield admin
    admin.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path, postgres: PostgresAdmin | None
) -> Iterator[str]:
    """A fresh, migrated database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "console.db"
        shutil.copyfile(sqlite_template, path)
        yield f"sqlite+aiosqlite:///{path}"
        return
    yield from _fresh_postgres(postgres)


@pytest.fixture
def postgres_url(postgres: PostgresAdmin | None) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database, for what only PostgreSQL does (row locks under concurrency)."""
    yield from _fresh_postgres(postgres)


def _fresh_postgres(postgres: PostgresAdmin | None) -> Iterator[str]:
    if postgres is None:
        if os.environ.get("CONSOLE_REQUIRE_POSTGRES"):
            pytest.fail(f"{POSTGRES_ENV} is not set but CONSOLE_REQUIRE_POSTGRES is")
        pytest.skip(f"set {POSTGRES_ENV} to run PostgreSQL tests")
    name = postgres.create()
    yield postgres.url_for(name)
    postgres.drop(name)


@pytest.fixture(scope="session")
def state_key() -> str:
    return secrets.token_urlsafe(32)


@pytest.fixture(scope="session")
def deployer_http(tmp_path_factory: pytest.TempPathFactory, state_key: str) -> Iterator[ServerProcess]:
    """The demo deployer as its own process over Streamable HTTP."""
    log = tmp_path_factory.mktemp("deployer") / "stderr.txt"
    with start_http_server(
        [sys.executable, "-m", "console.demo.deployer"], {"DEPLOY_STATE_KEY": state_key}, log
    ) as server:
        yield server


@pytest.fixture(scope="session")
def mrtr_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The MRTR test server as its own process over Streamable HTTP, logging every request it gets."""
    folder = tmp_path_factory.mktemp("mrtr")
    env = {"MRTR_LOG": str(folder / "requests.jsonl")}
    with start_http_server(
        [sys.executable, str(REPO / "tests/servers/mrtr_server.py")], env, folder / "stderr.txt"
    ) as server:
        yield server


@pytest.fixture
def mrtr_stdio(tmp_path: Path) -> Mrtr:
    """The MRTR test server over stdio: its own process and log per test."""
    log = tmp_path / "log.jsonl"
    return Mrtr(stdio_mrtr(log), log)


@pytest.fixture
def mrtr_memory(tmp_path: Path) -> Mrtr:
    """The MRTR test server in the console's own event loop (tests/memory.py), for a console that
    `running_console` runs: a server of its own per connection, its log per test."""
    log = tmp_path / "log.jsonl"
    return Mrtr(memory_mrtr(log), log)


@pytest.fixture(params=[pytest.param(kind, marks=pytest.mark.transport) for kind in ("stdio", "http")])
def mrtr(request: pytest.FixtureRequest, mrtr_stdio: Mrtr, mrtr_http: ServerProcess) -> Mrtr:
    """The MRTR test server over stdio and over HTTP (whose log the whole session shares): for the tests
    that guard both transports; the others take `mrtr_memory`."""
    if request.param == "stdio":
        return mrtr_stdio
    assert mrtr_http.log_path is not None
    return Mrtr(ServerSpec(url=mrtr_http.url), mrtr_http.log_path)


@pytest.fixture
def tracker(tmp_path: Path) -> Iterator[Tracker]:
    """A fresh connect demo server (its connections live in memory) that knows dev and lead."""
    with start_tracker(tmp_path / "tracker.txt") as started:
        yield started
