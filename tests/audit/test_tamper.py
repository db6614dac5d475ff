"""Every kind of tampering with the audit tables is caught by verify, which names the first bad event."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Connection, select, text, update
from sqlalchemy.orm import Session

from console.audit.checking import PAGE_LIMIT, ChainStatus, verify_database, verify_new
from console.audit.models import AuditCheckpoint, AuditEvent, AuditHead
from console.audit.records import (
    EVENT_FIELDS,
    chain_hash,
    checkpoint_message,
    checkpoint_record,
    event_content,
)
from console.audit.signing import Signer
from console.audit.verify import Report
from console.db import create_engine, session_factory
from console.transactions import transaction
from tests.audit.chain_setup import behind_the_back, new_signer, write_events

pytestmark = pytest.mark.anyio
COUNT = 20  # checkpoints (every 5 events) land at seq 1, 6, 11 and 16


async def verify(url: str, signer: Signer) -> Report:
    engine = create_engine(url)
    try:
        async with session_factory(engine)() as session:
            return await verify_database(session=session, public_key=signer.key.public_key())
    finally:
        await engine.dispose()


def edit_field(db: Connection) -> None:
    db.execute(text("UPDATE audit_event SET payload_json = :p WHERE seq = 7"), {"p": '{"n":99}'})


def delete_row(db: Connection) -> None:
    db.execute(text("DELETE FROM audit_event WHERE seq = 7"))


def delete_first_row(db: Connection) -> None:
    db.execute(text("DELETE FROM audit_event WHERE seq = 1"))


def remove_hash(db: Connection) -> None:
    db.execute(text("UPDATE audit_event SET hash = NULL, prev_hash = NULL WHERE seq = 7"))


def swap_rows(db: Connection) -> None:
    with Session(bind=db) as session:
        a, b = (session.get(AuditEvent, seq) for seq in (7, 8))
        assert a is not None
        assert b is not None
        columns = [c.key for c in AuditEvent.__table__.columns if c.key != "seq"]
        values = {seq: {c: getattr(row, c) for c in columns} for seq, row in ((7, a), (8, b))}
        session.execute(update(AuditEvent).where(AuditEvent.seq == 7).values(**values[8]))
        session.execute(update(AuditEvent).where(AuditEvent.seq == 8).values(**values[7]))


def drop_tail_after_checkpoint(db: Connection) -> None:
    db.execute(text("DELETE FROM audit_event WHERE seq >= 14"))


def drop_tail_beyond_last_checkpoint(db: Connection) -> None:
    db.execute(text("DELETE FROM audit_event WHERE seq >= 17"))


def delete_checkpoint(seq: int) -> Callable[[Connection], None]:
    def go(db: Connection) -> None:
        db.execute(text("DELETE FROM audit_checkpoint WHERE seq = :seq"), {"seq": seq})

    return go


def rehash_last(db: Connection) -> None:
    """Edit the newest event and recompute its hash, but not the head row's."""
    with Session(bind=db) as session:
        last = session.get(AuditEvent, COUNT)
        assert last is not None
        last.payload_json = '{"n":99}'
        last.hash = chain_hash(last.prev_hash or "", event_content(last))
        session.flush()


def append_event(db: Connection) -> None:
    """A well-chained event after the last one, written without moving the head row."""
    with Session(bind=db) as session:
        last = session.get(AuditEvent, COUNT)
        assert last is not None
        added = AuditEvent(
            seq=COUNT + 1,
            at=last.at,
            actor_type="user",
            actor_id="u1",
            action="server_tested",
            subject_type="test",
            subject_id="forged",
            payload_json='{"n":99}',
            prev_hash=last.hash,
        )
        added.hash = chain_hash(last.hash or "", event_content(added))
        session.add(added)
        session.flush()


def replace_signature(db: Connection) -> None:
    other = db.execute(text("SELECT signature FROM audit_checkpoint WHERE seq = 6")).scalar_one()
    db.execute(text("UPDATE audit_checkpoint SET signature = :s WHERE seq = 11"), {"s": other})


def rewrite_chain(resign: Signer | None) -> Callable[[Connection], None]:
    """Edit event 7, recompute every later hash and the head; with `resign`, sign new checkpoints too."""

    def go(db: Connection) -> None:
        with Session(bind=db) as session:
            events = session.execute(select(AuditEvent).order_by(AuditEvent.seq)).scalars().all()
            events[6].payload_json = '{"n":99}'
            for previous, event in zip(events[5:], events[6:], strict=False):
                event.prev_hash = previous.hash
                event.hash = chain_hash(previous.hash or "", event_content(event))
            by_seq = {e.seq: e for e in events}
            prev_signature = ""
            for checkpoint in session.execute(
                select(AuditCheckpoint).order_by(AuditCheckpoint.seq)
            ).scalars():
                if resign is not None:
                    checkpoint.hash = by_seq[checkpoint.seq].hash or ""
                    checkpoint.key_id, checkpoint.prev_signature = resign.key_id, prev_signature
                    checkpoint.signature = resign.sign(checkpoint_message(checkpoint_record(checkpoint)))
                    prev_signature = checkpoint.signature
            head = session.get(AuditHead, 1)
            assert head is not None
            head.hash = events[-1].hash or ""
            session.flush()

    return go


@pytest.mark.parametrize(
    ("tamper", "seq", "kind"),
    [
        (edit_field, 7, "edited"),
        (delete_row, 7, "deleted"),
        (delete_first_row, 1, "deleted"),
        (remove_hash, 7, "edited"),
        (swap_rows, 7, "reordered"),
        (drop_tail_after_checkpoint, 14, "truncated"),
        (drop_tail_beyond_last_checkpoint, 17, "truncated"),
        (replace_signature, 11, "forged_checkpoint"),
        (rewrite_chain(None), 11, "rewritten"),
        (rewrite_chain(new_signer()), 1, "forged_checkpoint"),
        (delete_checkpoint(1), 6, "deleted"),
        (delete_checkpoint(6), 11, "deleted"),
        (delete_checkpoint(16), 16, "deleted"),
        (append_event, COUNT + 1, "edited"),
        (rehash_last, COUNT, "edited"),
    ],
    ids=[
        "edit",
        "delete",
        "delete-first",
        "unhash",
        "swap",
        "truncate",
        "truncate-unsigned-tail",
        "signature",
        "recompute",
        "resign",
        "delete-first-checkpoint",
        "delete-checkpoint",
        "delete-latest-checkpoint",
        "append",
        "rehash-last",
    ],
)
async def test_verify_names_the_first_tampered_event(
    database_url: str, tamper: Callable[[Connection], None], seq: int, kind: str
) -> None:
    signer = new_signer()
    await write_events(database_url, signer, COUNT)
    clean = await verify(database_url, signer)
    assert clean.ok, clean.lines()
    assert (clean.events, clean.checkpoints, clean.signed_seq) == (COUNT, 4, 16)
    with behind_the_back(database_url) as db:
        tamper(db)
    report = await verify(database_url, signer)
    assert report.problem is not None, report.lines()
    assert (report.problem.seq, report.problem.kind) == (seq, kind), report.lines()


async def verify_page(url: str, signer: Signer, limit: int = PAGE_LIMIT) -> ChainStatus:
    engine = create_engine(url)
    try:
        async with transaction(session_factory(engine)) as session:
            return await verify_new(session=session, public_key=signer.key.public_key(), limit=limit)
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("tamper", "checked", "found"),
    [
        (edit_field, 5, (7, "edited")),
        (delete_row, 5, (7, "deleted")),
        (remove_hash, 5, (7, "edited")),
        (swap_rows, 5, (7, "reordered")),
        (drop_tail_after_checkpoint, 5, (14, "truncated")),
        (drop_tail_beyond_last_checkpoint, 5, (17, "truncated")),
        (replace_signature, 5, (11, "forged_checkpoint")),
        (rewrite_chain(None), 5, (11, "rewritten")),
        (rewrite_chain(new_signer()), 5, (6, "forged_checkpoint")),
        (delete_checkpoint(6), 5, (11, "deleted")),
        (delete_checkpoint(16), 5, (16, "deleted")),
        (append_event, 5, (COUNT + 1, "edited")),
        (rehash_last, 5, (COUNT, "edited")),
        # Before the last check, with the hashes after it recomputed: the event it ended at changed.
        (rewrite_chain(None), 10, (10, "rewritten")),
        (rewrite_chain(new_signer()), 10, (10, "rewritten")),
        # Before the last check, leaving the later hashes alone: only the whole check finds these.
        (edit_field, 10, None),
        (delete_first_row, 5, None),
        (delete_checkpoint(1), 5, None),
    ],
    ids=[
        "edit",
        "delete",
        "unhash",
        "swap",
        "truncate",
        "truncate-unsigned-tail",
        "signature",
        "recompute",
        "resign",
        "delete-checkpoint",
        "delete-latest-checkpoint",
        "append",
        "rehash-last",
        "recompute-before",
        "resign-before",
        "edit-before",
        "delete-first-before",
        "delete-first-checkpoint-before",
    ],
)
async def test_the_audit_page_finds_tampering_after_its_last_check_without_rereading_before(
    database_url: str, tamper: Callable[[Connection], None], checked: int, found: tuple[int, str] | None
) -> None:
    signer = new_signer()
    await write_events(database_url, signer, COUNT)
    first = await verify_page(database_url, signer, limit=checked)
    assert first.report.ok, first.report.lines()
    assert (first.report.last_seq, first.unchecked) == (checked, COUNT - checked)
    with behind_the_back(database_url) as db:
        tamper(db)
    status = await verify_page(database_url, signer)
    assert status.earlier_seq == checked
    problem = status.report.problem
    assert ((problem.seq, problem.kind) if problem else None) == found, status.report.lines()
    whole = await verify(database_url, signer)
    assert not whole.ok, whole.lines()  # `console audit verify` finds every one of them


HASHES = ("prev_hash", "hash")
EDITS: dict[str, Any] = {
    "at": datetime(2001, 1, 1, tzinfo=UTC),
    "actor_type": "token",
    "actor_id": "tampered",
    "action": "tampered",
    "subject_type": "tampered",
    "subject_id": "tampered",
    "call_id": "tampered",
    "team_id": "tampered",
    "server": "tampered",
    "tool": "tampered",
    "outcome": "tampered",
    "payload_json": '{"n":99}',
    "seq": 1000,
}


def test_the_hash_covers_exactly_every_column_of_an_event_but_the_hashes() -> None:
    """A column left out of the hash could be edited unseen; a field hashed that is no column could not be
    checked from the table."""
    columns = {column.key for column in AuditEvent.__table__.columns} - set(HASHES)
    as_hashed = {"payload" if column == "payload_json" else column for column in columns}
    assert set(EVENT_FIELDS) == as_hashed
    sample = AuditEvent(seq=1, at=datetime.now(UTC), payload_json="{}")
    assert set(event_content(sample)) == as_hashed
    assert set(EDITS) == columns  # the test below edits each of them


@pytest.mark.parametrize("column", sorted(EDITS))
async def test_an_edit_of_any_hashed_column_is_reported_by_verify(database_url: str, column: str) -> None:
    signer = new_signer()
    await write_events(database_url, signer, COUNT)
    with behind_the_back(database_url) as db:
        changed = db.execute(update(AuditEvent).where(AuditEvent.seq == 7).values({column: EDITS[column]}))
        assert changed.rowcount == 1
    report = await verify(database_url, signer)
    assert report.problem is not None, (column, report.lines())
    if column != "seq":  # a moved row reads as a deletion at 7 instead
        assert (report.problem.seq, report.problem.kind) == (7, "edited"), report.lines()
