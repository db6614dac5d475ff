"""The audit page: auditors see a decision as its approver saw it, filter, download and verify; no secrets."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from sqlalchemy import text

from console.audit.export import verify_file
from console.audit.signing import load_private_key, new_private_key_text, public_key_text
from console.db import create_engine
from tests.audit.chain_setup import behind_the_back, write_events
from tests.harness import Mrtr, html, one, running_console, signed_in

pytestmark = pytest.mark.anyio


async def audit_text(database_url: str) -> str:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(text("SELECT * FROM audit_event"))
            return "\n".join(repr(tuple(row)) for row in rows)
    finally:
        await engine.dispose()


async def test_auditor_reviews_a_decision_filters_and_downloads_a_verifiable_export(
    database_url: str, mrtr_memory: Mrtr, caplog: pytest.LogCaptureFixture
) -> None:
    key = new_private_key_text()
    public = public_key_text(load_private_key(key).public_key())
    name = "alice-" + secrets.token_hex(4)
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, audit_signing_key=key, audit_checkpoint_every=3
    ) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "release"})
        call = await console.answer_and_settle(call, "accept", {"name": name})
        call = await console.answer_and_settle(call, "accept", {"amount": 7, "count": 2})
        assert call["status"] == "completed"
        async with signed_in(console, "viewer") as auditor, signed_in(console, "lead") as approver:
            refused = await approver.client.get("/audit")
            assert refused.status_code == 403
            page = await auditor.client.get(
                "/audit", params={"action": "question_answered", "outcome": "accept"}
            )
            assert page.status_code == 200, page.text
            soup = html(page)
            assert one(soup, "#chain-badge").get_text().startswith("Chain verified up to seq")
            assert one(soup, "#public-key").get_text() == public
            rows = soup.select("#audit-events tbody tr")
            assert [one(r, ".action").get_text() for r in rows] == ["question_answered"] * 2
            assert {one(r, ".actor").get_text() for r in rows} == {"lead"}
            first = rows[-1].select_one("a")
            assert first is not None
            detail = html(await auditor.client.get(str(first["href"])))
            assert "Arguments" in one(detail, "#approver-saw").get_text()
            assert '"topic": "release"' in one(detail, "#saw-params").get_text()
            assert one(detail, "#saw-message").get_text().strip() != ""
            assert name in one(detail, "#event-payload").get_text()
            assert name in one(detail, "#sent-back").get_text()
            download = await auditor.client.get(
                "/audit/export", params={"action": "question_answered", "format": "jsonl"}
            )
            assert download.status_code == 200
            report = verify_file(download.content, load_private_key(key).public_key())
            assert report.ok, report.lines()
            assert report.events == 2
            csv_download = await auditor.client.get("/audit/export", params={"format": "csv"})
            assert verify_file(csv_download.content, load_private_key(key).public_key()).ok
            assert (await approver.client.get("/audit/export")).status_code == 403
            cookies: list[Any] = [c.value for c in auditor.client.cookies.jar] + [auditor.csrf, approver.csrf]
    stored = await audit_text(database_url)
    logged = caplog.text
    secret_values = [*console.tokens.values(), "lead-pw-1", "viewer-pw-1", f"r2:{name}", *cookies]
    leaked = [s for s in secret_values if s and (s in stored or s in logged)]
    assert leaked == []


def page_seqs(soup: Any) -> list[int]:
    return [int(one(row, "td a").get_text()) for row in soup.select("#audit-events tbody tr")]


def export_seqs(body: bytes) -> list[int]:
    records = [json.loads(line) for line in body.decode().splitlines()]
    return sorted(r["seq"] for r in records if r.get("type") == "event")


OTHER_TEAM = {"team": "elsewhere"}
BEFORE_ALL = {"until": "2000-01-01T00:00"}


@pytest.mark.parametrize(
    ("criteria", "expect"),
    [
        ({"team": "platform"}, lambda e: e["team"] == "platform"),
        (OTHER_TEAM, lambda e: False),  # the auditor sees no event of a team they are not in
        ({"user": "lead"}, lambda e: e["actor"] == "lead"),
        ({"server": "mrtr"}, lambda e: e["server"] == "mrtr"),
        ({"tool": "complete_now"}, lambda e: e["tool"] == "complete_now"),
        (
            {"tool": "two_rounds", "outcome": "decline"},
            lambda e: e["tool"] == "two_rounds" and e["outcome"] == "decline",
        ),
        (BEFORE_ALL, lambda e: False),
        ({"since": "2000-01-01T00:00", "action": "call_started"}, lambda e: e["action"] == "call_started"),
    ],
)
async def test_every_filter_shows_and_exports_the_same_events(
    database_url: str, mrtr_memory: Mrtr, criteria: dict[str, str], expect: Any
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await console.call("mrtr", "complete_now", {"x": "one"})
        asked = await console.call("mrtr", "two_rounds", {"topic": "filters"})
        await console.answer_and_settle(asked, "decline")
        async with signed_in(console, "viewer") as auditor:
            everything = html(await auditor.client.get("/audit"))
            rows: list[dict[str, Any]] = [
                {
                    "seq": int(one(r, "td a").get_text()),
                    "actor": one(r, ".actor").get_text(),
                    "action": one(r, ".action").get_text(),
                    "outcome": one(r, ".outcome").get_text(),
                    "team": r.select("td")[5].get_text(),
                    "server": r.select("td")[6].get_text(),
                    "tool": r.select("td")[7].get_text(),
                }
                for r in everything.select("#audit-events tbody tr")
            ]
            assert 0 < len(rows) < 50  # one page holds them all
            wanted = sorted(r["seq"] for r in rows if expect(r))
            assert bool(wanted) == (criteria not in (OTHER_TEAM, BEFORE_ALL))  # the others select some
            filtered = html(await auditor.client.get("/audit", params=criteria))
            assert sorted(page_seqs(filtered)) == wanted
            exported = await auditor.client.get("/audit/export", params={**criteria, "format": "jsonl"})
            assert exported.status_code == 200
            assert export_seqs(exported.content) == wanted


def newest_seq(url: str) -> int:
    with behind_the_back(url) as db:
        return int(db.execute(text("SELECT max(seq) FROM audit_event")).scalar_one())


def tamper(url: str, seq: int) -> None:
    with behind_the_back(url) as db:
        db.execute(text("UPDATE audit_event SET payload_json = '{}' WHERE seq = :seq"), {"seq": seq})


async def test_the_chain_badge_checks_only_new_events_and_a_tampered_new_one_turns_it_red(
    database_url: str,
) -> None:
    async with (
        running_console(database_url, {}) as console,
        signed_in(console, "viewer") as auditor,
        signed_in(console, "lead") as approver,
    ):
        assert (await approver.client.get("/audit")).status_code == 403
        first = html(await auditor.client.get("/audit"))
        verified = newest_seq(database_url)
        assert text_of(first, "#chain-badge") == f"Chain verified up to seq {verified}"
        assert text_of(first, "#chain-checked").startswith(f"Checked now: the {verified} events from seq 1")

        tamper(database_url, 2)  # verified already: the page does not read it again
        again = html(await auditor.client.get("/audit"))
        assert text_of(again, "#chain-badge") == f"Chain verified up to seq {verified}"
        checked = text_of(again, "#chain-checked")
        assert checked.startswith(f"No events chained since the last check; up to seq {verified}")
        assert "console audit verify checks the whole chain again" in checked

        await write_events(database_url, None, 2, label="new")
        tamper(database_url, verified + 2)
        broken = html(await auditor.client.get("/audit"))
        badge = one(broken, "#chain-badge")
        assert badge.get_text() == f"Chain broken at seq {verified + 2}"
        assert "status-failed" in badge["class"]


def text_of(soup: Any, selector: str) -> str:
    return " ".join(one(soup, selector).get_text().split())


async def test_every_event_of_a_call_that_asked_names_its_team_server_and_tool(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    """The events of a round trip come from several transactions (the call, its round, the answer and
    the resume it queued, the reply): each names what an auditor filters them by."""
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        asked = await console.call("mrtr", "two_rounds", {"topic": "context"})
        second = await console.answer_and_settle(asked, "accept", {"name": "Ada"})
        done = await console.answer_and_settle(second, "accept", {"amount": 7, "count": 2})
        assert done["status"] == "completed", done
        async with signed_in(console, "viewer") as auditor:
            exported = await auditor.client.get("/audit/export", params={"format": "jsonl"})
    assert exported.status_code == 200
    records = [json.loads(line) for line in exported.content.decode().splitlines()]
    of_call = [r for r in records if r.get("type") == "event" and r["call_id"] == asked["id"]]
    actions = {r["action"] for r in of_call}
    assert {
        "call_started",
        "round_received",
        "question_answered",
        "resume_queued",
        "call_completed",
    } <= actions
    assert [(r["action"], r["server"]) for r in of_call if r["server"] != "mrtr"] == []
    teams_and_tools = {(r["team_id"], r["tool"]) for r in of_call}
    assert len(teams_and_tools) == 1
    assert [tool for team_id, tool in teams_and_tools if team_id] == ["two_rounds"]
