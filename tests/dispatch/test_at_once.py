"""A call whose first send or resume completes is recorded with plain statements
(console/calls/replies/at_once.py), and only while the job and the call are as that send left them: otherwise
nothing is written, and the reply goes the general way."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from sqlalchemy import Executable, Insert, insert, select, update

from console.audit.checking import verify_database
from console.audit.models import AuditEvent
from console.calls.models import Call, CallRound, DispatchJob
from console.calls.replies.at_once import record_completed
from console.calls.service import CallView
from console.db import new_id
from console.identity.models import Team
from console.mcp.models import McpServer
from tests.harness import TEAM, Console, memory_mrtr, running_console

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
    return call_id, await _sending(console, call_id, "initial")


async def _resume_out(console: Console) -> tuple[str, str]:
    """A call that asked once, was answered, and has its resume marked as being sent by WORKER: a
    dispatcher runs only until the call waits for its answer."""
    dispatcher = console.new_dispatcher()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(dispatcher.run)
        waiting = await console.call("mrtr", "signed", {"item": "a"}, wait=20)
        tasks.cancel_scope.cancel()
    assert waiting["status"] == "awaiting_input", waiting
    answered = await console.answer(waiting["pending"][0]["id"], "accept", {"ok": True})
    assert answered.status_code == 200, answered.text
    return waiting["id"], await _sending(console, waiting["id"], "resume")


async def _sending(console: Console, call_id: str, kind: str) -> str:
    """The call's queued job of `kind`, marked as being sent by WORKER."""
    async with console.runtime.factory() as session:
        job_id: str = (
            await session.execute(
                select(DispatchJob.id).where(
                    DispatchJob.call_id == call_id, DispatchJob.kind == kind, DispatchJob.status == "ready"
                )
            )
        ).scalar_one()
        await session.execute(
            update(DispatchJob)
            .where(DispatchJob.id == job_id)
            .values(status="sending", claimed_by=WORKER, attempts=1)
        )
        await session.commit()
    return job_id


SENDS = {"initial": _first_send_out, "resume": _resume_out}


async def _record(console: Console, kind: str, call_id: str, job_id: str) -> CallView | None:
    async with console.runtime.factory() as session:
        recorded = await record_completed(
            session,
            job_id=job_id,
            kind=kind,
            call_id=call_id,
            worker_id=WORKER,
            result=RESULT,
            protocol=PROTOCOL,
        )
        if recorded is not None:  # as the dispatcher does: else its transaction rolls back
            await session.commit()
        return recorded


@dataclass
class _State:
    call: str
    result: str | None
    job: str
    rounds: list[str]
    actions: list[str]


async def _state(console: Console, call_id: str, job_id: str) -> _State:
    async with console.runtime.factory() as session:
        call = await session.get(Call, call_id)
        job = await session.get(DispatchJob, job_id)
        rounds = (
            await session.execute(
                select(CallRound.status).where(CallRound.call_id == call_id).order_by(CallRound.n)
            )
        ).scalars()
        actions = (
            await session.execute(
                select(AuditEvent.action).where(AuditEvent.call_id == call_id).order_by(AuditEvent.seq)
            )
        ).scalars()
        assert call is not None
        assert job is not None
        return _State(call.status, call.result_json, job.status, list(rounds), list(actions))


@pytest.mark.parametrize("kind", list(SENDS))
async def test_a_send_that_completes_is_recorded_as_the_general_path_records_it(
    database_url: str, tmp_path: Path, kind: str
) -> None:
    async with running_console(
        database_url, {"mrtr": memory_mrtr(tmp_path / "log.jsonl")}, dispatcher=False
    ) as console:
        call_id, job_id = await SENDS[kind](console)
        view = await _record(console, kind, call_id, job_id)
        async with console.runtime.factory() as session:
            event = (
                await session.execute(select(AuditEvent).where(AuditEvent.action == "call_completed"))
            ).scalar_one()
            team_id = (await session.execute(select(Team.id).where(Team.name == TEAM))).scalar_one()
            protocol = (await session.execute(select(McpServer.protocol_version))).scalar_one()
            job = await session.get(DispatchJob, job_id)
            report = await verify_database(session=session, public_key=None)
        state = await _state(console, call_id, job_id)
        shown = (await console.client.get(f"/api/v1/calls/{call_id}", headers=console.auth("dev"))).json()
    assert view is not None
    assert (view.call.status, view.server, view.team_id) == ("completed", "mrtr", team_id)
    assert (shown["status"], shown["result"]) == ("completed", RESULT)
    assert job is not None
    assert (job.status, job.lease_until) == ("done", None)
    assert (event.team_id, event.server, event.outcome) == (team_id, "mrtr", "completed")
    assert event.tool == ("complete_now" if kind == "initial" else "signed")
    assert json.loads(event.payload_json)["job"] == kind
    assert state.rounds == ([] if kind == "initial" else ["answered"])
    assert protocol == PROTOCOL
    assert report.problem is None, report.problem


def _held_round_opened(call_id: str, job_id: str) -> Insert:
    """As a 2025 server's elicitation pushed while it held the resume open would have opened."""
    return insert(CallRound).values(
        id=new_id(), call_id=call_id, n=99, input_requests_json="{}", status="open", held=True
    )


MEANWHILE: dict[str, Callable[[str, str], Executable]] = {
    "another worker took the lease": lambda call_id, job_id: (
        update(DispatchJob).where(DispatchJob.id == job_id).values(claimed_by="another")
    ),
    "the call was abandoned": lambda call_id, job_id: (
        update(Call).where(Call.id == call_id).values(status="abandoned")
    ),
    "the server holds a round open": _held_round_opened,
}
CASES = [
    (kind, meanwhile)
    for kind in SENDS
    for meanwhile in MEANWHILE
    if kind == "resume" or meanwhile != "the server holds a round open"
]


@pytest.mark.parametrize(("kind", "meanwhile"), CASES)
async def test_a_send_whose_job_or_call_changed_meanwhile_is_left_to_the_general_path(
    database_url: str, tmp_path: Path, kind: str, meanwhile: str
) -> None:
    async with running_console(
        database_url, {"mrtr": memory_mrtr(tmp_path / "log.jsonl")}, dispatcher=False
    ) as console:
        call_id, job_id = await SENDS[kind](console)
        before = await _state(console, call_id, job_id)
        async with console.runtime.factory() as session:
            await session.execute(MEANWHILE[meanwhile](call_id, job_id))
            await session.commit()
        changed = await _state(console, call_id, job_id)
        view = await _record(console, kind, call_id, job_id)
        after = await _state(console, call_id, job_id)
    assert view is None
    assert (before.call, before.job) == ("running" if kind == "initial" else "resuming", "sending")
    # Nothing written: the job's and the round's updates are rolled back with the call's.
    assert after == changed
