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

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, record_event
from console.audit.chain import EventContext, knows_context
from console.calls.models import Call, DispatchJob, Run, call_target
from console.calls.notices import call_ended
from console.calls.service import CallView
from console.db import utcnow
from console.mcp.models import McpServer

_CALLS, _JOBS, _RUNS, _SERVERS = (
    cast(Table, model.__table__) for model in (Call, DispatchJob, Run, McpServer)
)

# Built once, as every statement on this path.
_JOB_DONE = (
    update(_JOBS)
    .where(
        _JOBS.c.id == bindparam("job_id"),
        _JOBS.c.status == "sending",
        _JOBS.c.claimed_by == bindparam("worker_id"),
        _JOBS.c.kind == "initial",
    )
    .values(status="done", lease_until=None)
    .returning(_JOBS.c.id)
)
_OF_RUN, _OF_SERVER = _RUNS.c, _SERVERS.c
_CALL_COMPLETED = (
    update(_CALLS)
    .where(
        _CALLS.c.id == bindparam("call_id"),
        _CALLS.c.status == "running",
        _CALLS.c.task_id.is_(None),
        _CALLS.c.round == 0,
    )
    .values(
        status="completed", result_json=bindparam("result_json"), error_json=None, updated_at=bindparam("now")
    )
    .returning(
        *_CALLS.c,
        select(_OF_RUN.team_id).where(_OF_RUN.id == _CALLS.c.run_id).scalar_subquery().label("run_team_id"),
        select(_OF_RUN.owner_id).where(_OF_RUN.id == _CALLS.c.run_id).scalar_subquery().label("run_owner_id"),
        select(_OF_SERVER.name).where(_OF_SERVER.id == _CALLS.c.server_id).scalar_subquery().label("server"),
        select(_OF_SERVER.protocol_version)
        .where(_OF_SERVER.id == _CALLS.c.server_id)
        .scalar_subquery()
        .label("server_protocol"),
    )
)
_SERVER_PROTOCOL = (
    update(_SERVERS)
    .where(_OF_SERVER.id == bindparam("server_id"))
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
    job = (await session.execute(_JOB_DONE, {"job_id": job_id, "worker_id": worker_id})).first()
    if job is None:
        await session.rollback()
        return None
    parameters = {"call_id": call_id, "result_json": json.dumps(result), "now": utcnow()}
    row = (await session.execute(_CALL_COMPLETED, parameters)).first()
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
    record_event(
        session=session,
        actor=SYSTEM,
        action="call_completed",
        subject_type="call",
        subject_id=call.id,
        call_id=call.id,
        payload={"round": 0, "job": "initial", "result": result},
    )
    await session.commit()
    return CallView(call, found["server"], found["run_owner_id"], found["run_team_id"], [])
