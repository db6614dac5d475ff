"""A call whose first send completes is recorded with plain statements (console/dispatch/at_once.py), and
only while the job and the call are as that send left them: otherwise nothing is written, and the reply
goes the general way."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, update

from console.audit.checking import verify_database
from console.audit.models import AuditEvent
from console.calls.models import Call, DispatchJob
from console.calls.service import CallView
from console.dispatch.at_once import record_completed
from console.identity.models import Team
from console.mcp.models import McpServer
from tests.harness import TEAM, Console, running_console, stdio_mrtr

pytestmark = pytest.mark.anyio

WORKER = "worker-at-once"
RESULT = {"content": [{"type": "text", "text": "done"}]}
PROTOCOL = "2099-01-01"  # no server speaks it: seen on the server row only if this path wrote it


async def _first_send_out(console: Console) -> tuple[str, str]:
    """A call recorded with its first send marked as being sent by WORKER (no dispatcher runs)."""
    started = await console.start(
        "mrtr", "tools/call", {"name": "complete_now", "arguments": {"x": "a"}}, wait=0
    )
    call_id: str = started.json()["id"]
    async with console.app.state.factory() as session:
        job_id = (
            await session.execute(select(DispatchJob.id).where(DispatchJob.call_id == call_id))
        ).scalar_one()
        await session.execute(
            update(DispatchJob)
            .where(DispatchJob.id == job_id)
            .values(status="sending", claimed_by=WORKER, attempts=1)
        )
        await session.commit()
    return call_id, job_id


async def _record(console: Console, call_id: str, job_id: str) -> CallView | None:
    async with console.app.state.factory() as session:
        return await record_completed(
            session, job_id=job_id, call_id=call_id, worker_id=WORKER, result=RESULT, protocol=PROTOCOL
        )


async def _state(console: Console, call_id: str, job_id: str) -> tuple[str, str | None, str, list[str]]:
    async with console.app.state.factory() as session:
        call = await session.get(Call, call_id)
        job = await session.get(DispatchJob, job_id)
        actions = (
            await session.execute(select(AuditEvent.action).where(AuditEvent.call_id == call_id))
        ).scalars()
        assert call is not None
        assert job is not None
        return call.status, call.result_json, job.status, list(actions)


async def test_a_first_send_that_completes_is_recorded_as_the_general_path_records_it(
    database_url: str, tmp_path: Path
) -> None:
    async with running_console(
        database_url, {"mrtr": stdio_mrtr(tmp_path / "log.jsonl")}, dispatcher=False
    ) as console:
        call_id, job_id = await _first_send_out(console)
        view = await _record(console, call_id, job_id)
        async with console.app.state.factory() as session:
            event = (
                await session.execute(select(AuditEvent).where(AuditEvent.action == "call_completed"))
            ).scalar_one()
            team_id = (await session.execute(select(Team.id).where(Team.name == TEAM))).scalar_one()
            protocol = (await session.execute(select(McpServer.protocol_version))).scalar_one()
            job = await session.get(DispatchJob, job_id)
            report = await verify_database(session=session, public_key=None)
        shown = (await console.client.get(f"/api/v1/calls/{call_id}", headers=console.auth("dev"))).json()
    assert view is not None
    assert (view.call.status, view.server, view.team_id) == ("completed", "mrtr", team_id)
    assert (shown["status"], shown["result"]) == ("completed", RESULT)
    assert job is not None
    assert (job.status, job.lease_until) == ("done", None)
    assert (event.team_id, event.server, event.tool, event.outcome) == (
        team_id,
        "mrtr",
        "complete_now",
        "completed",
    )
    assert protocol == PROTOCOL
    assert report.problem is None, report.problem


MEANWHILE = {
    "another worker took the lease": lambda call_id, job_id: (
        update(DispatchJob).where(DispatchJob.id == job_id).values(claimed_by="another")
    ),
    "the call was abandoned": lambda call_id, job_id: (
        update(Call).where(Call.id == call_id).values(status="abandoned")
    ),
}


@pytest.mark.parametrize("meanwhile", list(MEANWHILE))
async def test_a_send_whose_job_or_call_changed_meanwhile_is_left_to_the_general_path(
    database_url: str, tmp_path: Path, meanwhile: str
) -> None:
    async with running_console(
        database_url, {"mrtr": stdio_mrtr(tmp_path / "log.jsonl")}, dispatcher=False
    ) as console:
        call_id, job_id = await _first_send_out(console)
        async with console.app.state.factory() as session:
            await session.execute(MEANWHILE[meanwhile](call_id, job_id))
            await session.commit()
        view = await _record(console, call_id, job_id)
        status, result, job_status, actions = await _state(console, call_id, job_id)
    assert view is None
    expected = "abandoned" if meanwhile == "the call was abandoned" else "running"
    # Nothing written: the job's update is rolled back with the call's.
    assert (status, result, job_status, actions) == (expected, None, "sending", ["call_started"])
