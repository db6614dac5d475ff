"""The audit log knows a server's result by its digest: `call_completed` carries the SHA-256 and size of
the result's canonical JSON, which anyone holding the result can compute again, never the result; the
chain still verifies, the export carries the digest and the audit page shows it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from sqlalchemy import select

from console.audit.checking import verify_database
from console.audit.models import AuditEvent
from console.canonical import canonical_bytes
from tests.harness import MEMORY_BULKY, ServerSpec, html, one, running_console, signed_in, text

pytestmark = pytest.mark.anyio


def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


async def test_call_completed_carries_the_results_digest_and_size_never_the_result(database_url: str) -> None:
    async with running_console(database_url, {"bulky": ServerSpec(command=MEMORY_BULKY)}) as console:
        asked = await console.call("bulky", "bulky", {"size": 5000, "ask_first": True})
        done = await console.answer_and_settle(asked, "accept", {"ok": True}, who="dev")
        assert done["status"] == "completed", done
        async with console.runtime.factory() as session:
            found = await session.execute(select(AuditEvent).where(AuditEvent.call_id == asked["id"]))
            events = list(found.scalars())
            report = await verify_database(session=session, public_key=None)
        async with signed_in(console, "viewer") as auditor:
            exported = await auditor.client.get("/audit/export", params={"format": "jsonl"})
            listed = await auditor.client.get("/audit", params={"action": "question_answered"})
            link = one(html(listed), "#audit-events tbody tr a").get("href")
            detail = html(await auditor.client.get(str(link)))
    result = done["result"]
    [completed] = [json.loads(e.payload_json) for e in events if e.action == "call_completed"]
    assert completed == {
        "round": 1,
        "job": "resume",
        "result_sha256": _sha256(result),
        "result_bytes": len(canonical_bytes(result)),
    }
    assert all("x" * 100 not in e.payload_json for e in events)
    assert report.problem is None, report.lines()
    assert exported.status_code == 200
    records = [json.loads(line) for line in exported.content.decode().splitlines()]
    [shown] = [r for r in records if r.get("action") == "call_completed"]
    assert shown["payload"]["result_sha256"] == _sha256(result)
    said = text(one(detail, "#server-did #result-digest"))
    assert f"{len(canonical_bytes(result))} bytes" in said
    assert _sha256(result) in said
