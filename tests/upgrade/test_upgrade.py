"""An upgrade from the console of 2026-12-01 (schema 0014), on SQLite and PostgreSQL: its database loaded
from a dump that code made (see make_dumps.py) with a question waiting for its approver and a
two-approver question one approver answered.

Until `console migrate` has run, `console serve` (from several processes too) and `console worker` refuse
in one line that names it; `console migrate` prints each revision it applies; the current code then
serves the old questions, and each call they hold resumes once and completes."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from console.db import postgres_conninfo
from console.migrate import database_revision, head_revision, pending_revisions
from tests.cli_runner import run_console
from tests.conftest import PostgresAdmin
from tests.harness import SECRET_KEY, result_text
from tests.processes import console_process, read_log

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OLD_REVISION = "0014"
WAITING_STATE = "kept across the upgrade"  # what at_0014.py's waiting call asked the server to keep
COMMAND_TIMEOUT = 120
WAIT = 20.0

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


class OldDatabase:
    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.url = url
        self.tokens = tokens

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_database(
    request: pytest.FixtureRequest, tmp_path: Path, postgres: PostgresAdmin | None
) -> Iterator[OldDatabase]:
    """A new database holding what the console of 2026-12-01 left in it, loaded from its dump."""
    tokens = json.loads((HERE / "schema_0014.tokens.json").read_text(encoding="utf-8"))[request.param]
    dump = (HERE / f"schema_0014.{request.param}.sql").read_text(encoding="utf-8")
    if request.param == "sqlite":
        path = tmp_path / "console.db"
        connection = sqlite3.connect(path)
        try:
            connection.executescript(dump)
        finally:
            connection.close()
        yield OldDatabase(f"sqlite+aiosqlite:///{path}", tokens)
        return
    if postgres is None:
        if os.environ.get("CONSOLE_REQUIRE_POSTGRES"):
            pytest.fail("CONSOLE_TEST_POSTGRES_URL is not set but CONSOLE_REQUIRE_POSTGRES is")
        pytest.skip("set CONSOLE_TEST_POSTGRES_URL to run PostgreSQL tests")
    name = postgres.create(migrated=False)
    url = postgres.url_for(name)
    # pg_dump's \restrict and \unrestrict lines are for psql alone; the rest is SQL.
    statements = "\n".join(line for line in dump.splitlines() if not line.startswith("\\"))
    with psycopg.connect(postgres_conninfo(url), autocommit=True) as loading:
        loading.execute(statements.encode())
    yield OldDatabase(url, tokens)
    postgres.drop(name)


def command_env(database_url: str) -> dict[str, str]:
    return {**os.environ, "CONSOLE_DATABASE_URL": database_url, "CONSOLE_SECRET_KEY": SECRET_KEY}


def console_command(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`console <args>` run to its end, in this process."""
    return run_console(args, env=command_env(database_url), timeout=COMMAND_TIMEOUT)


def console_commands(database_url: str, *commands: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Each `console <command>` as its own process, all at once; how each ended, in order."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "console.cli", *command],
            env=command_env(database_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    ended = []
    try:
        for command, process in zip(commands, started, strict=True):
            stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT)
            ended.append(subprocess.CompletedProcess(command, process.returncode, stdout, stderr))
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=COMMAND_TIMEOUT)
    return ended


def test_serve_worker_and_commands_on_a_database_behind_the_code_refuse_in_one_line_naming_migrate(
    old_database: OldDatabase,
) -> None:
    pending = len(pending_revisions(OLD_REVISION) or [])
    refusal = (
        f"error: the database's schema is at revision {OLD_REVISION}, older than this console's "
        f"{head_revision()} ({pending} migrations pending): run `console migrate` first"
    )
    serve, worker, listing = console_commands(
        old_database.url, ["serve", "--port", "0", "--workers", "2"], ["worker"], ["teams", "list"]
    )

    for done in (serve, worker, listing):
        assert (done.returncode, done.stderr.splitlines()) == (1, [refusal]), done.args
        assert done.stdout == ""  # never "listening on", a worker started, or a team listed
    assert database_revision(old_database.url) == OLD_REVISION


async def test_migrate_prints_each_revision_and_the_old_questions_are_answered_and_resume_once(
    old_database: OldDatabase, tmp_path: Path
) -> None:
    migrated = console_command(old_database.url, "migrate")
    assert migrated.returncode == 0, migrated.stderr
    *applied, last = migrated.stdout.splitlines()
    steps = [line.split(":", 1)[0] for line in applied]
    chain = [OLD_REVISION, *sorted(pending_revisions(OLD_REVISION) or [])]
    assert steps == [f"{down} \u2192 {up}" for down, up in zip(chain, chain[1:], strict=False)]
    assert all(line.split(": ", 1)[1] for line in applied)  # each says what it did
    assert last == f"database upgraded to {head_revision()}"
    again = console_command(old_database.url, "migrate")
    assert again.stdout.splitlines() == ["database is up to date"]

    # The server moved with the console: the operator points the old registration at this machine's copy.
    log = tmp_path / "requests.jsonl"
    server = shlex.join([sys.executable, str(REPO / "tests/servers/mrtr_server.py")])
    edited = console_command(
        old_database.url,
        "servers",
        "edit",
        "platform",
        "mrtr",
        "--command",
        server,
        "--env",
        f"MRTR_LOG={log}",
    )
    assert edited.returncode == 0, edited.stderr

    with console_process(old_database.url, tmp_path / "console.txt") as base_url:
        async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
            await answer_the_old_questions(client, old_database)

    resumes = [(r["name"], r["request_state"]) for r in read_log(log)]
    assert sorted(resumes) == [("echo_state", WAITING_STATE), ("two_rounds", "r1"), ("two_rounds", "r2:Ada")]


async def answer_the_old_questions(client: httpx.AsyncClient, db: OldDatabase) -> None:
    listed = await client.get("/api/v1/elicitations", params={"status": "pending"}, headers=db.auth("lead2"))
    assert listed.status_code == 200, listed.text
    pending = {item["key"]: item for item in listed.json()["items"]}
    assert sorted(pending) == ["first", "go"]

    waiting = await answer(client, db, pending["go"]["id"], "lead", content={"ok": True})
    assert waiting["status"] == "accepted"
    echoed = await settle(client, db, pending["go"]["call_id"], after_round=1)
    assert json.loads(result_text(echoed)) == {
        "received_state": WAITING_STATE,
        "has_request_state": True,
        "matches": True,
    }

    quorum = pending["first"]
    assert (quorum["approvals"], [s["user"] for s in quorum["signatures"]]) == (1, ["lead"])
    twice = await client.post(
        f"/api/v1/elicitations/{quorum['id']}/answer",
        json={"action": "accept", "content": {"name": "Ada"}},
        headers=db.auth("lead"),
    )
    assert twice.status_code == 409, twice.text  # lead's approval from before the upgrade still counts
    second = await answer(client, db, quorum["id"], "lead2", content_digest=quorum["content_digest"])
    assert (second["status"], second["approvals"]) == ("accepted", 2)
    asked = await settle(client, db, quorum["call_id"], after_round=1)
    assert [p["key"] for p in asked["pending"]] == ["second"]
    question = asked["pending"][0]["id"]
    signed = await answer(client, db, question, "lead", content={"amount": 3, "count": 4})
    await answer(client, db, question, "lead2", content_digest=signed["content_digest"])
    assert result_text(await settle(client, db, quorum["call_id"], after_round=2)) == "Ada 3 4"


async def answer(
    client: httpx.AsyncClient, db: OldDatabase, question: str, who: str, **body: Any
) -> dict[str, Any]:
    response = await client.post(
        f"/api/v1/elicitations/{question}/answer", json={"action": "accept", **body}, headers=db.auth(who)
    )
    assert response.status_code == 200, response.text
    answered: dict[str, Any] = response.json()
    return answered


async def settle(
    client: httpx.AsyncClient, db: OldDatabase, call_id: str, *, after_round: int
) -> dict[str, Any]:
    """The call once it finished or asks a round after `after_round` (bounded)."""
    params = {"wait": WAIT, "after_round": after_round}
    response = await client.get(f"/api/v1/calls/{call_id}", params=params, headers=db.auth("dev"))
    assert response.status_code in (200, 202), response.text
    call: dict[str, Any] = response.json()
    return call


def test_serve_and_migrate_leave_a_database_a_newer_console_migrated_as_it_is(sqlite_url: str) -> None:
    newer = "a-revision-of-a-newer-console"
    connection = sqlite3.connect(sqlite_url.removeprefix("sqlite+aiosqlite:///"))
    try:
        with connection:
            connection.execute("UPDATE alembic_version SET version_num = ?", (newer,))
    finally:
        connection.close()

    for done in console_commands(sqlite_url, ["serve", "--port", "0"], ["migrate"]):
        assert (done.returncode, done.stdout) == (1, ""), done.args
        assert done.stderr.splitlines() == [
            f"error: the database's schema is at revision {newer}, which this console does not know (its "
            f"newest is {head_revision()}): a newer console migrated it; run that version or a newer one"
        ]
    assert database_revision(sqlite_url) == newer
