"""A call that completes at its first send, recorded with plain statements.

Most calls end so: the server answers the call's first request with its result. Besides the audit
event, that needs the job marked done and the result on the call, written here as two conditional
UPDATEs that return what the agent is shown, not through ORM objects, whose loading and unit of work
cost more CPU than the statements (benchmark B1). The conditions are the general path's checks
(`Dispatcher._record`): the job is still this worker's first send of the call, and the call still runs,
as no task and in no round. When one fails nothing is written, and the reply is recorded the general way.
"""

from __future__ import annotations

import json
from typing import Any, cast

from sqlalchemy import Table, bindparam, exists, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit.chain import EventContext, knows_context
from console.calls.models import Call, DispatchJob, Run, call_target
from console.calls.notices import call_ended
from console.calls.service import CallView
from console.db import utcnow
from console.dispatch.outcomes import record_completion
from console.mcp.models import McpServer

_CALLS, _JOBS, _RUNS, _SERVERS = (
    cast(Table, model.__table__) for model in (Call, DispatchJob, Run, McpServer)
)

# Built once, as every statement on this path.
_JOB_DONE = (
    update(_JOBS)
    .where(
        _JOBS.c.id == bindparam("the_job"),
        _JOBS.c.status == "sending",
        _JOBS.c.claimed_by == bindparam("the_worker"),
        _JOBS.c.kind == "initial",
    )
    .values(status="done", lease_until=None)
    .returning(_JOBS.c.id)
)
_CALL_COMPLETED = (
    update(_CALLS)
    .where(
        _CALLS.c.id == bindparam("the_call"),
        _CALLS.c.status == "running",
        _CALLS.c.task_id.is_(None),
        _CALLS.c.round == 0,
    )
    .values(
        status="completed",
        result_json=bindparam("the_result"),
        error_json=None,
        updated_at=bindparam("the_time"),
    )
    .returning(
        *_CALLS.c,
        select(_RUNS.c.team_id).where(_RUNS.c.id == _CALLS.c.run_id).scalar_subquery().label("run_team_id"),
        select(_RUNS.c.owner_id).where(_RUNS.c.id == _CALLS.c.run_id).scalar_subquery().label("run_owner_id"),
        select(_SERVERS.c.name).where(_SERVERS.c.id == _CALLS.c.server_id).scalar_subquery().label("server"),
        select(_SERVERS.c.protocol_version)
        .where(_SERVERS.c.id == _CALLS.c.server_id)
        .scalar_subquery()
        .label("server_protocol"),
    )
)
# On PostgreSQL both in one statement, one round trip: the call is updated only if the job was, and a
# job updated without its call is rolled back with it.
_JOB_DONE_IN_WITH = _JOB_DONE.cte("job_done")
_BOTH_DONE = _CALL_COMPLETED.where(exists(select(_JOB_DONE_IN_WITH.c.id))).add_cte(_JOB_DONE_IN_WITH)
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
    call_id: str,
    worker_id: str,
    result: dict[str, Any],
    protocol: str | None,
) -> CallView | None:
    """Record `result` as the end of the call whose first send `job_id` was; the call as the agent is
    shown it. None, with nothing written, when the job or the call is not as a first send that completes
    at once leaves them."""
    # Named unlike any column: an UPDATE would also set a column its parameters name.
    parameters = {
        "the_job": job_id,
        "the_worker": worker_id,
        "the_call": call_id,
        "the_result": json.dumps(result),
        "the_time": utcnow(),
    }
    if session.get_bind().dialect.name == "postgresql":
        row = (await session.execute(_BOTH_DONE, parameters)).first()
    elif (await session.execute(_JOB_DONE, parameters)).first() is not None:
        row = (await session.execute(_CALL_COMPLETED, parameters)).first()
    else:
        row = None
    if row is None:
        await session.rollback()
        return None
    found = row._mapping
    call = Call(**{column: found[column] for column in _CALL_COLUMNS})
    if protocol is not None and found["server_protocol"] != protocol:
        await session.execute(_SERVER_PROTOCOL, {"server_id": call.server_id, "protocol": protocol})
    call_ended(session, call)
    context = EventContext(found["run_team_id"], found["server"], call_target(call.params_json))
    knows_context(session.sync_session, "call", call.id, context)
    record_completion(session, call, "initial", result)
    await session.commit()
    return CallView(call, found["server"], found["run_owner_id"], found["run_team_id"], [])
