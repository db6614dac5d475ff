"""A database restored from a backup taken before an answer or a send: with an audit witness, `/readyz`
and `console audit verify` say so, and the console that starts on it holds the call instead of sending
it a second time; a person may send a held request again. Backups and restores are the real tools':
`console backup` and SQLite's online backup API, `pg_dump` and `pg_restore`."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import anyio
import httpx
import pytest

from console.audit import SYSTEM, record_event, session_info
from console.cli.backup import sqlite_database
from console.db import create_engine, is_sqlite, postgres_conninfo, session_factory
from tests.cli_runner import run_console
from tests.harness import SECRET_KEY, memory_mrtr, running_console, stdio_mrtr
from tests.harness import test_settings as settings_for
from tests.processes import console_process, read_log

pytestmark = pytest.mark.anyio

TIMEOUT = 60
OPERATOR_EVENTS = 20  # more than an answer and its resume chain


def _cli(*args: str, url: str, witness: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CONSOLE_DATABASE_URL": url,
        "CONSOLE_SECRET_KEY": SECRET_KEY,
        "CONSOLE_AUDIT_WITNESS_FILE": str(witness),
    }
    return run_console(args, env=env)


def _run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr


def _back_up(url: str, witness: Path, into: Path) -> Path:
    """The backup an operator takes while the console runs, as docs/operations/backup.md says."""
    if is_sqlite(url):
        backup = into / "backup.db"
        done = _cli("backup", str(backup), url=url, witness=witness)
        assert done.returncode == 0, done.stderr
        return backup
    backup = into / "backup.dump"
    _run("pg_dump", "--format=custom", f"--file={backup}", postgres_conninfo(url))
    return backup


def _restore(url: str, backup: Path) -> None:
    """Put the backup back in the database's place (here under the running console, to see /readyz)."""
    if is_sqlite(url):
        live = sqlite_database(url)
        assert live is not None
        with closing(sqlite3.connect(backup)) as source, closing(sqlite3.connect(live, timeout=30)) as target:
            source.backup(target)
        return
    _run(
        "pg_restore",
        "--clean",
        "--if-exists",
        "--single-transaction",
        "-d",
        postgres_conninfo(url),
        str(backup),
    )


def _sends_of(log: Path, item: str) -> list[dict[str, object]]:
    return [r for r in read_log(log) if r["name"] == "signed" and r["arguments"] == {"item": item}]


async def test_a_restore_from_before_an_answer_is_reported_and_its_call_held_instead_of_resent(
    database_url: str, tmp_path: Path
) -> None:
    log, witness = tmp_path / "requests.jsonl", tmp_path / "witness" / "audit-witness.jsonl"
    witness.parent.mkdir()
    servers = {"mrtr": stdio_mrtr(log)}
    async with running_console(database_url, servers, audit_witness_file=str(witness)) as console:
        waiting = await console.call("mrtr", "signed", {"item": "restored"})
        assert waiting["status"] == "awaiting_input"
        backup = _back_up(database_url, witness, tmp_path)
        done = await console.answer_and_settle(waiting, "accept", {"ok": True})
        assert done["status"] == "completed"
        assert (await console.client.get("/readyz")).status_code == 200

        _restore(database_url, backup)
        ready = await console.client.get("/readyz")
        assert ready.status_code == 503
        assert "restored from an older backup" in ready.json()["reason"]
        assert str(witness) not in ready.text
        assert "its witness file recorded" in ready.json()["reason"]
        tokens = console.tokens
    assert len(_sends_of(log, "restored")) == 2  # the call and the resume its answer sent

    verified = _cli("audit", "verify", url=database_url, witness=witness)
    assert verified.returncode == 1
    first = verified.stdout.splitlines()[0]
    assert first.startswith("FAILED: the audit chain ends at seq")
    assert "restored from an older backup" in first

    env = {"CONSOLE_AUDIT_WITNESS_FILE": str(witness)}
    with console_process(database_url, tmp_path / "console.txt", **env) as base:
        async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT) as http:
            dev = {"Authorization": f"Bearer {tokens['dev']}"}
            held = (await http.get(f"/api/v1/calls/{waiting['id']}", headers=dev)).json()
            assert held["status"] == "interrupted"
            assert "after the backup this database was restored from" in held["error"]["message"]
            lead = {"Authorization": f"Bearer {tokens['lead']}"}
            again = await http.post(
                f"/api/v1/elicitations/{waiting['pending'][0]['id']}/answer",
                json={"action": "accept", "content": {"ok": True}},
                headers=lead,
            )
            assert again.status_code == 409, again.text
            question = (
                await http.get(f"/api/v1/elicitations/{waiting['pending'][0]['id']}", headers=lead)
            ).json()
            assert question["status"] == "interrupted"
            assert "restored from a backup taken before its answer" in question["decided_where"]
            resent = await http.post(f"/api/v1/calls/{waiting['id']}/resend", headers=dev)
            assert resent.status_code == 409
            assert "holds no request to send again" in resent.json()["error"]["message"]
            assert (await http.get("/readyz")).status_code == 200
    assert len(_sends_of(log, "restored")) == 2  # nothing was sent again

    verified = _cli("audit", "verify", url=database_url, witness=witness)
    assert verified.returncode == 0, verified.stdout


async def test_a_request_sent_after_the_backup_is_held_after_the_restore_and_sent_again_only_when_asked(
    database_url: str, tmp_path: Path
) -> None:
    log, witness = tmp_path / "requests.jsonl", tmp_path / "witness.jsonl"
    servers = {"mrtr": memory_mrtr(log)}
    async with running_console(
        database_url, servers, dispatcher=False, audit_witness_file=str(witness)
    ) as console:
        queued = await console.call("mrtr", "signed", {"item": "queued"}, wait=0)
        assert queued["status"] == "running"  # its request waits in the outbox
        backup = _back_up(database_url, witness, tmp_path)
        dispatcher = console.new_dispatcher()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(dispatcher.run)
            sent = await console.settle(queued["id"])
            tasks.cancel_scope.cancel()
        assert sent["status"] == "awaiting_input"
        tokens = console.tokens
    assert len(_sends_of(log, "queued")) == 1

    _restore(database_url, backup)
    async with running_console(
        database_url, servers, tokens=tokens, audit_witness_file=str(witness)
    ) as console:
        held = await console.get_call(queued["id"])
        assert held["status"] == "interrupted"
        assert "whether its server got the request is unknown here" in held["error"]["message"]
        resent = await console.client.post(
            f"/api/v1/calls/{queued['id']}/resend", headers=console.auth("dev")
        )
        assert resent.status_code == 200, resent.text
        again = await console.settle(queued["id"])
        assert again["status"] == "awaiting_input"
    assert len(_sends_of(log, "queued")) == 2  # once before the restore, once more when a person asked


async def test_a_restored_database_written_to_before_a_console_starts_on_it_still_has_its_call_held(
    database_url: str, tmp_path: Path
) -> None:
    log, witness = tmp_path / "requests.jsonl", tmp_path / "witness.jsonl"
    servers = {"mrtr": memory_mrtr(log)}
    async with running_console(database_url, servers, audit_witness_file=str(witness)) as console:
        waiting = await console.call("mrtr", "signed", {"item": "overwritten"})
        backup = _back_up(database_url, witness, tmp_path)
        done = await console.answer_and_settle(waiting, "accept", {"ok": True})
        assert done["status"] == "completed"
        tokens = console.tokens
    _restore(database_url, backup)
    # As commands run by an operator would: events chained at the seqs the witness already holds, more
    # of them than the answer's, so the witness's newest line is in the chain again.
    engine = create_engine(database_url)
    try:
        factory = session_factory(
            engine, info=session_info(settings_for(database_url, audit_witness_file=str(witness)))
        )
        for n in range(OPERATOR_EVENTS):
            async with factory() as session:
                record_event(
                    session=session,
                    actor=SYSTEM,
                    action="team_created",
                    subject_type="team",
                    subject_id=f"t{n}",
                )
                await session.commit()
    finally:
        await engine.dispose()

    async with running_console(
        database_url, servers, tokens=tokens, audit_witness_file=str(witness)
    ) as console:
        held = await console.get_call(waiting["id"])
        assert held["status"] == "interrupted"
    assert len(_sends_of(log, "overwritten")) == 2
