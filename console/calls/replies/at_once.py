"""A send that ends its call with a result, recorded with plain statements.

Most calls end so: the server answers the call's first request, or the resume of its last round, with
its result. Besides the audit event, that needs the job marked done, a resume's round answered and the
result on the call, written here as conditional UPDATEs that return what the agent is shown, not through
ORM objects, whose loading and unit of work cost more CPU than the statements (benchmarks B1 and B4). The
conditions are the general path's checks (`Dispatcher._record`): the job is still this worker's send of
the call, and the call still runs (a first send: in no round) or resumes (a resume: no round the server
holds open, which the general path would close), as no task. When one fails nothing is written, and the
reply is recorded the general way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, Update, bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.chain import EventContext, knows_context
from console.calls.models import Call, CallRound, DispatchJob, Run, call_target
from console.calls.moves import job_may_become, may_become
from console.calls.notices import call_ended
from console.calls.replies.outcomes import held_open_rounds, record_completion, round_answered
from console.calls.service import CallView
from console.calls.states import CallStatus, JobKind, JobStatus
from console.db import utcnow
from console.mcp.models import McpServer

_CALLS, _JOBS, _RUNS, _SERVERS = (
    cast(Table, model.__table__) for model in (Call, DispatchJob, Run, McpServer)
)


@dataclass(frozen=True)
class _Statements:
    """Built once per kind of send, as every statement on this path."""

    job_done: Update
    call_completed: Update
    both_done: Update  # on PostgreSQL, all in one statement: one round trip


def _job_done(kind: str) -> Update:
    return (
        update(_JOBS)
        .where(
            _JOBS.c.id == bindparam("the_job"),
            _JOBS.c.status == JobStatus.SENDING,
            _JOBS.c.claimed_by == bindparam("the_worker"),
            _JOBS.c.kind == kind,
            job_may_become(JobStatus.DONE, _JOBS.c.status),
        )
        .values(status=JobStatus.DONE, lease_until=None)
        .returning(_JOBS.c.id, _JOBS.c.round_id)
    )


def _still_as_sent(kind: str) -> ColumnElement[bool]:
    if kind == JobKind.INITIAL:
        return (_CALLS.c.status == CallStatus.RUNNING) & (_CALLS.c.round == 0)
    return (_CALLS.c.status == CallStatus.RESUMING) & ~exists(held_open_rounds(_CALLS.c.id))


def _call_completed(kind: str) -> Update:
    return (
        update(_CALLS)
        .where(
            _CALLS.c.id == bindparam("the_call"),
            _CALLS.c.task_id.is_(None),
            _still_as_sent(kind),
            may_become(CallStatus.COMPLETED, _CALLS.c.status),
        )
        .values(
            status=CallStatus.COMPLETED,
            result_json=bindparam("the_result"),
            error_json=None,
            updated_at=bindparam("the_time"),
        )
        .returning(
            *_CALLS.c,
            _of_run(_RUNS.c.team_id).label("run_team_id"),
            _of_run(_RUNS.c.owner_id).label("run_owner_id"),
            _of_server(_SERVERS.c.name).label("server"),
            _of_server(_SERVERS.c.protocol_version).label("server_protocol"),
        )
    )


def _of_run(column: Any) -> Any:
    return select(column).where(_RUNS.c.id == _CALLS.c.run_id).scalar_subquery()


def _of_server(column: Any) -> Any:
    return select(column).where(_SERVERS.c.id == _CALLS.c.server_id).scalar_subquery()


def _statements(kind: str) -> _Statements:
    job_done, call_completed = _job_done(kind), _call_completed(kind)
    # The call is updated only if the job was, and a job updated without its call is rolled back with it.
    job_in_with = job_done.cte("job_done")
    done = call_completed.where(exists(select(job_in_with.c.id))).add_cte(job_in_with)
    if kind == JobKind.RESUME:
        resumed = CallRound.id.in_(select(job_in_with.c.round_id))
        done = done.add_cte(round_answered(resumed).returning(CallRound.id).cte("answered"))
    return _Statements(job_done, call_completed, done)


COMPLETES_AT_ONCE = (JobKind.INITIAL, JobKind.RESUME)
_BY_KIND = {kind: _statements(kind) for kind in COMPLETES_AT_ONCE}
_ROUND_ANSWERED = round_answered(CallRound.id == bindparam("the_round"))
_SERVER_PROTOCOL = (
    update(_SERVERS)
    .where(_SERVERS.c.id == bindparam("server_id"))
    .values(protocol_version=bindparam("protocol"))
)
_CALL_COLUMNS = tuple(column.key for column in _CALLS.columns)


async def record_completed(
    session: AsyncSession,
    *,
    job_id: str,
    kind: str,
    call_id: str,
    worker_id: str,
    result: dict[str, Any],
    protocol: str | None,
) -> CallView | None:
    """Record `result` as the end of the call whose `kind` of send (one of COMPLETES_AT_ONCE) `job_id`
    was, in the caller's transaction; the call as the agent is shown it. None when the job or the call is
    not as that send left them: the caller then rolls back (on SQLite the job may have been updated)."""
    statements = _BY_KIND[JobKind(kind)]
    # Named unlike any column: an UPDATE would also set a column its parameters name.
    parameters = {
        "the_job": job_id,
        "the_worker": worker_id,
        "the_call": call_id,
        "the_result": json.dumps(result),
        "the_time": utcnow(),
    }
    if session.get_bind().dialect.name == "postgresql":
        row = (await session.execute(statements.both_done, parameters)).first()
    elif (job := (await session.execute(statements.job_done, parameters)).first()) is not None:
        row = (await session.execute(statements.call_completed, parameters)).first()
        if row is not None and job.round_id is not None:
            await session.execute(_ROUND_ANSWERED, {"the_round": job.round_id})
    else:
        row = None
    if row is None:
        return None
    found = row._mapping
    call = Call(**{column: found[column] for column in _CALL_COLUMNS})
    if protocol is not None and found["server_protocol"] != protocol:
        await session.execute(_SERVER_PROTOCOL, {"server_id": call.server_id, "protocol": protocol})
    call_ended(session, call)
    context = EventContext(found["run_team_id"], found["server"], call_target(call.params_json))
    knows_context(session.sync_session, "call", call.id, context)
    record_completion(session, call, kind, result)
    return CallView(call, found["server"], found["run_owner_id"], found["run_team_id"], [])
