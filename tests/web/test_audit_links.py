"""A URL-mode link is its owner's alone, in the audit log too: auditors and team admins see its origin and
path and the SHA-256 of the whole link on every audit page and in both exports, never its query; events an
older version recorded with the whole link are shown and exported the same way, and exports still verify."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from console.audit import SYSTEM, record_event
from console.audit.export import verify_file
from console.audit.signing import load_private_key, new_private_key_text
from tests.harness import (
    Browser,
    Console,
    Mrtr,
    html,
    one,
    promote,
    result_text,
    running_console,
    signed_in,
    text,
)

pytestmark = pytest.mark.anyio

LINK = "https://connect.example.com/start?flow=abc"  # what the MRTR test server's form_and_url asks to open
BARE = "https://connect.example.com/start"
QUERY = "flow=abc"
SHA = hashlib.sha256(LINK.encode()).hexdigest()


async def connect_call(console: Console) -> tuple[str, dict[str, str]]:
    """dev's agent calls form_and_url; dev agrees to open the link, lead approves; the call completes."""
    call = await console.call("mrtr", "form_and_url", {})
    ids = {p["key"]: p["id"] for p in call["pending"]}
    async with signed_in(console, "dev") as dev:
        gate = html(await dev.client.get(f"/connect/{ids['connect']}"))
        assert one(gate, ".url-text code").get_text() == LINK  # the owner sees the whole link
    assert (await console.question(ids["connect"], who="dev"))["url"] == LINK
    assert (await console.answer(ids["connect"], "accept", who="dev")).status_code == 200
    assert (await console.answer(ids["approve"], "accept", {"ok": True}, who="lead")).status_code == 200
    done = await console.settle(call["id"], after_round=1)
    assert result_text(done) == "approve=accept ok=True connect=accept"
    return call["id"], ids


async def record_as_an_older_version_did(console: Console, call_id: str) -> None:
    """A round_received event with the whole link in it, as versions before this one wrote them."""
    request = {"method": "elicitation/create", "params": {"mode": "url", "message": "Connect", "url": LINK}}
    async with console.runtime.factory() as session:
        record_event(
            session=session,
            actor=SYSTEM,
            action="round_received",
            subject_type="round",
            subject_id="older-round",
            call_id=call_id,
            payload={"round": 1, "input_requests": {"connect": request}, "request_state": None},
        )
        await session.commit()


async def audit_pages(who: Browser, call_id: str) -> dict[int, tuple[str, Any]]:
    """Every event of the call as the audit pages show it: seq -> (action, parsed detail page)."""
    listing = await who.client.get("/audit", params={"call": call_id})
    assert listing.status_code == 200, listing.text
    assert QUERY not in listing.text
    pages: dict[int, tuple[str, Any]] = {}
    for row in html(listing).select("#audit-events tbody tr"):
        detail = await who.client.get(str(one(row, "td a")["href"]))
        assert detail.status_code == 200, detail.text
        assert QUERY not in detail.text, text(html(detail))
        pages[int(one(row, "td a").get_text())] = (one(row, ".action").get_text(), html(detail))
    return pages


@pytest.mark.parametrize("reviewer", ["viewer", "lead2"])  # the team's auditor, and a team admin
async def test_reviewers_see_the_links_origin_path_and_digest_but_never_its_query(
    database_url: str, mrtr_memory: Mrtr, reviewer: str
) -> None:
    key = new_private_key_text()
    async with running_console(
        database_url, {"mrtr": mrtr_memory.spec}, audit_signing_key=key, audit_checkpoint_every=4
    ) as console:
        await promote(console, "lead2", role="admin")
        call_id, ids = await connect_call(console)
        await record_as_an_older_version_did(console, call_id)
        async with signed_in(console, reviewer) as who:
            pages = await audit_pages(who, call_id)
            rounds = [soup for action, soup in pages.values() if action == "round_received"]
            assert len(rounds) == 2  # the console's own, and the one an older version wrote
            for soup in rounds:
                payload = one(soup, "#event-payload").get_text()
                assert f'"url": "{BARE}"' in payload
                assert f'"url_sha256": "{SHA}"' in payload
            shown_link = [(action, soup) for action, soup in pages.values() if soup.select("#saw-url")]
            assert [action for action, _ in shown_link] == ["question_answered"]  # dev's, on the link
            decision = shown_link[0][1]
            assert one(decision, "#saw-message").get_text() == "Connect your example account"
            assert one(decision, "#saw-url").get_text() == BARE
            assert one(decision, "#saw-url-sha256").get_text() == SHA

            public = load_private_key(key).public_key()
            for fmt in ("jsonl", "csv"):
                exported = await who.client.get("/audit/export", params={"call": call_id, "format": fmt})
                assert exported.status_code == 200, exported.text
                assert QUERY.encode() not in exported.content
                assert SHA.encode() in exported.content
                report = verify_file(exported.content, public)
                assert report.ok, report.lines()
                assert (report.events, report.redacted) == (len(pages) - 1, 1), report.lines()
        # Nor does the agent API show a teammate's link.
        for teammate in ("viewer", "lead2", "lead"):
            response = await console.client.get(
                f"/api/v1/elicitations/{ids['connect']}", headers=console.auth(teammate)
            )
            assert response.status_code == 404, response.text
