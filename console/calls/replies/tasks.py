"""Following a call its server runs as a task (the tasks extension of MCP 2026-07-28).

The task's id is kept on the call, and each poll is a dispatch job due after the task's `pollIntervalMs`, so
any console process polls it, and a restart only delays the next poll. Questions of a task that requires
input become a round like any other; each key is asked once (a task lists what it still waits for on every
poll, and its status may lag behind the answers sent), and the answers go back with `tasks/update`, after
which polling goes on. `completed` ends the call with the task's result; `failed`, and `cancelled` by the
server, fail it with the reason.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, fingerprint, record_event
from console.calls.models import Call, CallRound, DispatchJob, Run
from console.calls.moves import move_call, move_job
from console.calls.replies.outcomes import end_call, fail_call, open_round, record_error, result_digest
from console.calls.states import CallStatus, JobKind, JobStatus
from console.calls.tasks import CANCEL, POLL, cancel_task_of
from console.config import Settings
from console.db import utcnow
from console.errors import McpProtocolError
from console.mcp.endpoint import Complete, InputRequired, McpRequest, Reply, Task
from console.mcp.roots import Root
from console.mcp.tasks import CANCEL as CANCEL_METHOD
from console.mcp.tasks import GET, UPDATE

# The console polls no faster than this whatever a server asks (and as often as this when it names no
# interval), and no slower than the longest, so a task that stalls is still noticed.
MIN_POLL_MS = 100
DEFAULT_POLL_MS = 1000
MAX_POLL_MS = 5 * 60 * 1000
TASK_JOBS = frozenset({POLL, CANCEL})


def task_request(task_id: str, kind: str, responses: dict[str, Any] | None) -> McpRequest:
    """The tasks/* request a job of a task's call sends: a poll, a cancel, or a resume's answers."""
    task = {"taskId": task_id}
    if kind == POLL:
        return McpRequest(GET, task)
    if kind == CANCEL:
        return McpRequest(CANCEL_METHOD, task)
    return McpRequest(UPDATE, {**task, "inputResponses": responses or {}})


def repeatable(call: Call, job: DispatchJob) -> bool:
    """Whether sending the job again is harmless when its outcome was lost: a poll reads, and a task ignores
    answers to keys it already has (a cancel is sent once, as a courtesy)."""
    return call.task_id is not None and job.kind != CANCEL


async def record_task_reply(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    reply: Reply,
    settings: Settings,
    server: str,
    roots: tuple[Root, ...],
) -> None:
    """Apply what the server answered about the call's task; the caller commits. An answer that does not
    fit (another task, not a task where one was due, questions the console refuses) fails the call, and
    the task is cancelled."""
    try:
        if isinstance(reply, Complete) and job.kind == JobKind.RESUME:  # tasks/update acknowledged
            queue_poll(session, call, job, None)
            return
        if not isinstance(reply, Task):
            raise McpProtocolError(f"the server answered a {job.kind} of its task with something else")
        if call.task_id is None:
            call.task_id = reply.task_id
            _record_task_event(session, call, "task_created", reply)
        elif reply.task_id != call.task_id:
            raise McpProtocolError("the server answered about another task")
        _show_status(call, reply)
        if reply.status == "completed":
            end_call(session, call, CallStatus.COMPLETED, result=reply.result)
            _record_task_event(session, call, "call_completed", reply, result=reply.result)
        elif reply.status == "failed":
            failed = reply.error or {"message": reply.message or "the task failed"}
            fail_call(session=session, call=call, job=job, error=failed)
        elif reply.status == "cancelled":  # not by the console, which stops polling once it cancels
            said = f": {reply.message}" if reply.message else ""
            fail_call(
                session=session, call=call, job=job, error={"message": f"the server cancelled the task{said}"}
            )
        elif reply.status == "input_required" and (new := await _not_asked_yet(session, call, reply)):
            await open_round(
                session=session,
                call=call,
                run=run,
                job=job,
                reply=InputRequired(input_requests=new),
                settings=settings,
                server=server,
                roots=roots,
            )
        else:
            queue_poll(session, call, job, reply.poll_interval_ms)
    except McpProtocolError as exc:
        await record_error(session=session, call=call, job=job, error=exc)
        await cancel_task_of(session=session, call_id=call.id)


def queue_poll(session: AsyncSession, call: Call, job: DispatchJob, interval_ms: int | None) -> None:
    """The next `tasks/get`, after the interval the task asked for (within bounds): the poll job again, or
    a new one after another kind of job."""
    wait = min(max(interval_ms if interval_ms is not None else DEFAULT_POLL_MS, MIN_POLL_MS), MAX_POLL_MS)
    due = utcnow() + timedelta(milliseconds=wait)
    move_call(call, CallStatus.RUNNING)
    if job.kind == POLL:
        move_job(job, JobStatus.READY)
        job.not_before, job.claimed_by, job.attempts = due, None, 0
        return
    session.add(DispatchJob(call_id=call.id, kind=POLL, status=JobStatus.READY, not_before=due))


def record_cancel_sent(session: AsyncSession, call: Call, outcome: Reply | Exception) -> None:
    """The audit log says the console asked the server to cancel the call's task, and what came back."""
    answer = "acknowledged" if isinstance(outcome, Complete) else str(outcome)
    record_event(
        session=session,
        actor=SYSTEM,
        action="task_cancel_sent",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={"task": fingerprint(call.task_id or ""), "answer": answer[:300]},
    )


async def _not_asked_yet(session: AsyncSession, call: Call, task: Task) -> dict[str, Any]:
    """What the task asks that no earlier round of the call asked (keys are never reused by a task)."""
    asked: set[str] = set()
    earlier = await session.execute(select(CallRound.input_requests_json).where(CallRound.call_id == call.id))
    for requests_json in earlier.scalars():
        asked.update(json.loads(requests_json))
    return {key: value for key, value in (task.input_requests or {}).items() if key not in asked}


def _show_status(call: Call, task: Task) -> None:
    # The run page shows a task's status where other calls show progress; a task reports no progress.
    message = f"task {task.status.replace('_', ' ')}" + (f": {task.message}" if task.message else "")
    call.progress_json = json.dumps(
        {"job": None, "progress": None, "total": None, "message": message, "at": utcnow().isoformat()}
    )


def _record_task_event(
    session: AsyncSession, call: Call, action: str, task: Task, *, result: Any = None
) -> None:
    payload: dict[str, Any] = {"task": fingerprint(task.task_id), "status": task.status}
    if task.message:
        payload["message"] = task.message
    if result is not None:
        payload.update(result_digest(result))
    record_event(
        session=session,
        actor=SYSTEM,
        action=action,
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload=payload,
    )
