"""B1's second floor: B1's floor API (benchmarks/floor_api.py) plus the records the console keeps of every
call, written as cheaply as this stack allows. It measures what the console's guarantees cost by
themselves (the audit chain, policies, runs and the dispatch outbox), apart from how the console is
built (the ORM, the dispatcher, wake-ups).

`python -m benchmarks.floor_records UPSTREAM_URL DATABASE_URL` serves the console's
`POST /api/v1/runs/{run_id}/calls` on a console database (migrated and seeded: benchmarks/setup.py) and
prints `listening on URL`. Per request it does what a call that completes at once needs in the console,
with plain statements built once and no ORM objects:
- the console's own token check (`authenticate_token`: the token with its user, team and role);
- the run with the team's server of the body's name, and the team's policy rules (read, not evaluated);
- one transaction that writes the call, its dispatch job and the `call_started` audit event, chained at
  commit by the console's own code (console/audit/chain.py);
- the MCP request, with the console's `ConnectionPool`, to UPSTREAM_URL;
- one transaction that writes the result on the call, closes the job and chains `call_completed`.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any, cast

import anyio
from fastapi import FastAPI, HTTPException, Request
from sqlalchemy import Table, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit import SYSTEM, Actor, record_event
from console.audit.chain import EventContext, knows_context
from console.calls.models import Call, DispatchJob, Run
from console.db import create_engine, new_id, session_factory, utcnow
from console.errors import Unauthorized
from console.identity.service import authenticate_token
from console.listening import serve_and_announce
from console.mcp.endpoint import Complete, Endpoint, McpRequest
from console.mcp.models import McpServer
from console.mcp.pool import ConnectionPool
from console.policies.models import PolicyRule

CALLS, JOBS, RULES = (cast(Table, model.__table__) for model in (Call, DispatchJob, PolicyRule))
RUN_AND_SERVER = (
    select(Run.team_id, Run.owner_id, McpServer.id.label("server_id"), McpServer.name.label("server"))
    .join(McpServer, (McpServer.team_id == Run.team_id) & (McpServer.name == bindparam("server")))
    .where(Run.id == bindparam("run_id"))
)
RULES_OF_TEAM = select(RULES).where(RULES.c.team_id == bindparam("team_id"))
CALL_STARTED = insert(CALLS)
JOB_SENDING = insert(JOBS)
CALL_ENDED = (
    update(CALLS)
    .where(CALLS.c.id == bindparam("call_id"))
    .values(status="completed", result_json=bindparam("result_json"), updated_at=bindparam("now"))
)
JOB_DONE = update(JOBS).where(JOBS.c.id == bindparam("job_id")).values(status="done", lease_until=None)
LEASE = timedelta(seconds=30)


def build_app(factory: async_sessionmaker[AsyncSession], pool: ConnectionPool, upstream: Endpoint) -> FastAPI:
    app = FastAPI()

    @app.post("/api/v1/runs/{run_id}/calls")
    async def start_call(run_id: str, request: Request) -> dict[str, Any]:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        async with factory() as session:
            try:
                principal = await authenticate_token(session=session, token=token)
            except Unauthorized:
                raise HTTPException(status_code=401) from None
            body = json.loads(await request.body())
            params = body["params"]
            run = (await session.execute(RUN_AND_SERVER, {"run_id": run_id, "server": body["server"]})).one()
            (await session.execute(RULES_OF_TEAM, {"team_id": run.team_id})).all()
            call_id, job_id = new_id(), new_id()
            context = EventContext(team_id=run.team_id, server=run.server, tool=params["name"])
            started = {"run_id": run_id, "server_id": run.server_id, "server": run.server}
            await _started(session, principal.actor, started, call_id, job_id, params, context)
            reply = await pool.send(upstream, McpRequest("tools/call", params))
            if not isinstance(reply, Complete):
                raise ValueError("the floor forwards calls that complete at once")
            await _ended(session, call_id, job_id, reply.result, context)
        return {"id": call_id, "run_id": run_id, "status": "completed", "result": reply.result}

    return app


async def _started(
    session: AsyncSession,
    actor: Actor,
    run: dict[str, str],
    call_id: str,
    job_id: str,
    params: dict[str, Any],
    context: EventContext,
) -> None:
    now = utcnow()
    call = {
        "id": call_id,
        "run_id": run["run_id"],
        "server_id": run["server_id"],
        "method": "tools/call",
        "params_json": json.dumps(params),
        "status": "running",
        "round": 0,
        "restarts": 0,
        "created_at": now,
        "updated_at": now,
        "people_sample": False,
    }
    await session.execute(CALL_STARTED, call)
    job = {
        "id": job_id,
        "call_id": call_id,
        "kind": "initial",
        "status": "sending",
        "attempts": 1,
        "not_before": now,
        "lease_until": now + LEASE,
        "claimed_by": "floor",
        "created_at": now,
    }
    await session.execute(JOB_SENDING, job)
    knows_context(session.sync_session, "call", call_id, context)
    payload = {"server": run["server"], "method": "tools/call", "params": params}
    _audit(session, actor, "call_started", call_id, payload)
    await session.commit()


async def _ended(
    session: AsyncSession, call_id: str, job_id: str, result: Any, context: EventContext
) -> None:
    await session.execute(
        CALL_ENDED, {"call_id": call_id, "result_json": json.dumps(result), "now": utcnow()}
    )
    await session.execute(JOB_DONE, {"job_id": job_id})
    knows_context(session.sync_session, "call", call_id, context)
    _audit(session, SYSTEM, "call_completed", call_id, {"round": 0, "job": "initial", "result": result})
    await session.commit()


def _audit(session: AsyncSession, actor: Actor, action: str, call_id: str, payload: dict[str, Any]) -> None:
    record_event(
        session=session,
        actor=actor,
        action=action,
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload=payload,
    )


async def serve(upstream_url: str, database_url: str) -> None:
    engine = create_engine(database_url)
    async with ConnectionPool(request_timeout=60) as pool:
        app = build_app(session_factory(engine), pool, Endpoint.http(upstream_url))
        await serve_and_announce(app, "127.0.0.1", 0, "")
    await engine.dispose()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2])
