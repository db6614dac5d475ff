"""The audit page's check starts where the previous one ended: it reads only events chained since."""

from __future__ import annotations

import pytest
from sqlalchemy import Connection, text

from tests.audit.chain_setup import behind_the_back, new_signer, write_events
from tests.audit.test_tamper import verify, verify_page

pytestmark = pytest.mark.anyio


EDIT = text("UPDATE audit_event SET payload_json = :p WHERE seq = :seq")


def edit(db: Connection, seq: int, payload: str = '{"n":99}') -> None:
    db.execute(EDIT, {"p": payload, "seq": seq})


async def test_each_check_reads_only_new_events_and_a_tampered_new_one_fails_until_mended(
    database_url: str,
) -> None:
    signer = new_signer()
    await write_events(database_url, signer, 10, label="a")
    first = await verify_page(database_url, signer)
    assert first.report.ok, first.report.lines()
    assert (first.report.events, first.report.last_seq, first.earlier_seq) == (10, 10, 0)
    again = await verify_page(database_url, signer)
    assert (again.report.ok, again.report.events, again.earlier_seq, again.report.last_seq) == (
        True,
        0,
        10,
        10,
    )
    assert again.earlier_at is not None

    with behind_the_back(database_url) as db:
        edit(db, 3)  # already verified: not read again by the page
    await write_events(database_url, signer, 5, label="b")
    later = await verify_page(database_url, signer)
    assert later.report.ok, later.report.lines()
    assert (later.report.events, later.checked_from, later.report.last_seq) == (5, 11, 15)
    whole = await verify(database_url, signer)
    assert whole.problem is not None
    assert (whole.problem.seq, whole.problem.kind) == (3, "edited")

    await write_events(database_url, signer, 3, label="c")
    with behind_the_back(database_url) as db:
        original = db.execute(text("SELECT payload_json FROM audit_event WHERE seq = 17")).scalar_one()
        edit(db, 17)
    for _ in range(2):  # the mark stays where the last good check ended
        broken = await verify_page(database_url, signer)
        assert broken.report.problem is not None, broken.report.lines()
        assert (broken.report.problem.seq, broken.report.problem.kind, broken.earlier_seq) == (
            17,
            "edited",
            15,
        )
    with behind_the_back(database_url) as db:
        edit(db, 17, original)
    mended = await verify_page(database_url, signer)
    assert mended.report.ok, mended.report.lines()
    assert (mended.report.events, mended.report.last_seq) == (3, 18)


async def test_a_check_reads_at_most_its_limit_and_leaves_the_rest_to_the_next(database_url: str) -> None:
    signer = new_signer(every=4)
    await write_events(database_url, signer, 12)
    seen = []
    for _ in range(3):
        status = await verify_page(database_url, signer, limit=5)
        assert status.report.ok, status.report.lines()
        seen.append((status.report.events, status.report.last_seq, status.unchecked))
    assert seen == [(5, 5, 7), (5, 10, 2), (2, 12, 0)]
    assert status.report.signed_seq == 9  # the checkpoint remembered across checks, then the newest
    assert status.report.signed_at is not None


async def test_whole_and_incremental_checks_agree_on_a_clean_chain(database_url: str) -> None:
    signer = new_signer(every=3)
    await write_events(database_url, signer, 7)
    await verify_page(database_url, signer, limit=4)
    await write_events(database_url, signer, 2, label="more")
    status = await verify_page(database_url, signer)
    whole = await verify(database_url, signer)
    assert status.report.ok, status.report.lines()
    assert whole.ok, whole.lines()
    assert (status.report.last_seq, status.report.head_hash) == (whole.last_seq, whole.head_hash)
    assert (status.report.signed_seq, status.report.last_signature) == (
        whole.signed_seq,
        whole.last_signature,
    )
