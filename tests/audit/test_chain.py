"""The chain under concurrent writers, and exports that verify offline until a byte changes."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import anyio
import pytest

from console.audit import Sequencer
from console.audit.chain import BATCH
from console.audit.chain import SIGNER as SIGNER_KEY
from console.audit.checking import verify_database
from console.audit.export import render, verify_file
from console.audit.extract import export_events
from console.audit.store import AuditFilter, checkpoints
from console.db import create_engine, session_factory
from tests.audit.chain_setup import new_signer, write_events
from tests.cli_runner import run_console

pytestmark = pytest.mark.anyio


@pytest.mark.timeout(420)  # 4,000 chained commits within 240 s, plus set-up
@pytest.mark.postgres  # SQLite serialises writers with BEGIN IMMEDIATE; the head-row lock is PostgreSQL's
async def test_eight_concurrent_writers_make_one_unbroken_chain(postgres_url: str) -> None:
    """Writers that find the head held leave their events waiting; once a sequencer has chained what
    was left, every event is in one chain, signed every 100 events (plus the rest of the batch that
    crossed them)."""
    database_url = postgres_url
    signer = new_signer(every=100)
    with anyio.fail_after(240):
        async with anyio.create_task_group() as tg:
            for writer in range(8):
                tg.start_soon(write_events, database_url, signer, 500, f"w{writer}-")
    engine = create_engine(database_url)
    try:
        factory = session_factory(engine, info={SIGNER_KEY: signer})
        await Sequencer(factory).drain()
        async with factory() as session:
            report = await verify_database(session=session, public_key=signer.key.public_key())
            signed = [c.seq for c in await checkpoints(session=session)]
    finally:
        await engine.dispose()
    assert report.ok, report.lines()
    assert (report.events, report.last_seq, report.waiting) == (4000, 4000, 0)
    gaps = [later - earlier for earlier, later in itertools.pairwise([0, *signed])]
    assert signed
    assert all(gap >= 100 for gap in gaps[1:]), gaps
    assert all(gap < 100 + BATCH for gap in gaps), gaps
    assert 4000 - signed[-1] < 100


async def export(url: str, fmt: str, f: AuditFilter) -> bytes:
    engine = create_engine(url)
    try:
        async with session_factory(engine)() as session:
            return await export_events(session=session, f=f, fmt=fmt, signer=SIGNER)  # type: ignore[arg-type]  # jsonl|csv
    finally:
        await engine.dispose()


SIGNER = new_signer()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
async def test_export_verifies_offline_and_one_changed_byte_does_not(database_url: str, fmt: str) -> None:
    await write_events(database_url, SIGNER, 12, label="a")
    data = await export(database_url, fmt, AuditFilter())
    report = verify_file(data, SIGNER.key.public_key())
    assert report.ok, report.lines()
    assert report.events == 12
    for position in (len(data) // 3, len(data) // 2, len(data) - 5):
        edited = bytearray(data)
        edited[position] = ord("0") if edited[position] != ord("0") else ord("1")
        assert not verify_file(bytes(edited), SIGNER.key.public_key()).ok, position
    assert not verify_file(data, new_signer().key.public_key()).ok


async def test_an_export_missing_a_signed_checkpoint_fails_even_when_resealed(database_url: str) -> None:
    """Whoever drops a checkpoint from an export can recompute its digest, not sign it: the gap shows."""
    await write_events(database_url, SIGNER, 12, label="a")  # checkpoints at seq 1, 6 and 11
    data = await export(database_url, "jsonl", AuditFilter())
    records = [json.loads(line) for line in data.decode().splitlines()][:-1]  # without the seal
    assert [r["seq"] for r in records if r["type"] == "checkpoint"] == [1, 6, 11]
    kept = [r for r in records if not (r["type"] == "checkpoint" and r["seq"] == 6)]
    report = verify_file(render(kept, "jsonl", None), SIGNER.key.public_key())
    assert report.problem is not None, report.lines()
    assert (report.problem.seq, report.problem.kind) == (11, "deleted"), report.lines()


async def test_filtered_export_keeps_the_chain_checkable_across_left_out_events(database_url: str) -> None:
    await write_events(database_url, SIGNER, 30, label="a")
    written = AuditFilter(action="server_tested", user="u1", call=None, team=None)
    data = await export(database_url, "jsonl", written)
    assert verify_file(data, SIGNER.key.public_key()).ok
    only_some = await export(
        database_url, "jsonl", AuditFilter().narrowed(since=None, tool=None, action="none")
    )
    assert verify_file(only_some, SIGNER.key.public_key()).events == 0


def test_cli_export_then_verify_offline_exit_codes(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'c.db'}"
    env = {"CONSOLE_DATABASE_URL": url, "PATH": "/usr/bin:/bin"}

    def console(*args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return run_console(args, env={**env, **(extra or {})}, cwd=tmp_path)

    keygen = console("audit", "keygen", "--out", str(tmp_path / "audit.key"))
    assert keygen.returncode == 0, keygen.stderr
    public = keygen.stdout.split("public key: ")[1].strip()
    keyed = {"CONSOLE_AUDIT_SIGNING_KEY_FILE": str(tmp_path / "audit.key")}
    assert console("teams", "add", "ops", extra=keyed).returncode == 0
    assert console("teams", "add", "qa", extra=keyed).returncode == 0
    verified = console("audit", "verify", extra=keyed)
    assert verified.returncode == 0, verified.stdout
    assert verified.stdout.startswith("OK"), verified.stdout
    out = tmp_path / "ops.jsonl"
    assert console("audit", "export", "--team", "ops", "--out", str(out), extra=keyed).returncode == 0
    offline = console("audit", "verify", "--file", str(out), "--public-key", public)
    assert offline.returncode == 0, offline.stdout
    assert "events checked: 1" in offline.stdout
    out.write_bytes(out.read_bytes().replace(b'"name":"ops"', b'"name":"0ps"'))
    tampered = console("audit", "verify", "--file", str(out), "--public-key", public)
    assert tampered.returncode == 1
    assert tampered.stdout.startswith("FAILED at seq 1: edited"), tampered.stdout
