"""B1's second floor: B1's floor API (benchmarks/floor_api.py) plus the records the console keeps of every
call, written as cheaply as this stack allows. It measures what the console's guarantees cost by
themselves (the audit chain, policies, runs and the dispatch outbox), apart from how the console is
built (the ORM, the dispatcher, wake-ups).

`python -m benchmarks.floor_records UPSTREAM_URL DATABASE_URL` serves the console's
`POST /api/v1/runs/{run_id}/calls` on a console database (migrated and seeded: benchmarks/setup.py) and
prints `listening on URL`. Per request it does what a call that completes at once needs in the console,
with plain statements built once and no ORM objects loaded:
- the console's own token check (`authenticate_token`: the token with its user, team and role);
- the run with the team's server of the body's name, and the team's policy rules (read, not evaluated);
- one transaction that writes the call and its dispatch job with the console's plain INSERTs
  (`insert_rows`) and the `call_started` audit event, chained at commit by the console's own code
  (console/audit/chain.py);
- the MCP request, with the console's `ConnectionPool`, to UPSTREAM_URL;
- one transaction that writes the result on the call, closes the job and chains `call_completed`, as the
  console records a call that completes at its first send (console/calls/replies/at_once.py).
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from typing import Any, cast

import anyio
from fastapi import FastAPI, HTTPException, Request
from sqlalchemy import Table, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.audit.chain import EventContext, knows_context
from console.calls.models import Call, DispatchJob, Run
from console.calls.replies.at_once import record_completed
from console.calls.service import record_started
from console.db import create_engine, insert_rows, new_id, session_factory, utcnow
from console.errors import Unauthorized
from console.identity.service import authenticate_token
from console.listening import serve_and_announce
from console.mcp.endpoint import Complete, Endpoint, McpRequest
from console.mcp.models import McpServer
from console.mcp.pool import ConnectionPool
from console.policies.models import PolicyRule

RULES = cast(Table, PolicyRule.__table__)
RUN_AND_SERVER = (
    select(Run.team_id, Run.owner_id, McpServer.id.label("server_id"), McpServer.name.label("server"))
    .join(McpServer, (McpServer.team_id == Run.team_id) & (McpServer.name == bindparam("server")))
    .where(Run.id == bindparam("run_id"))
)
RULES_OF_TEAM = select(RULES).where(RULES.c.team_id == bindparam("team_id"))
WORKER = "floor"
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
            call = Call(
                id=new_id(),
                run_id=run_id,
                server_id=run.server_id,
                method="tools/call",
                params_json=json.dumps(params),
                status="running",
            )
            job = DispatchJob(
                id=new_id(),
                call_id=call.id,
                kind="initial",
                status="sending",
                claimed_by=WORKER,
                attempts=1,
                lease_until=utcnow() + LEASE,
            )
            await insert_rows(session, call, job)
            context = EventContext(team_id=run.team_id, server=run.server, tool=params["name"])
            knows_context(session.sync_session, "call", call.id, context)
            record_started(session, principal.actor, call.id, run.server, "tools/call", params)
            await session.commit()
            reply = await pool.send(upstream, McpRequest("tools/call", params))
            if not isinstance(reply, Complete):
                raise ValueError("the floor forwards calls that complete at once")
            ended = await record_completed(
                session,
                job_id=job.id,
                kind="initial",
                call_id=call.id,
                worker_id=WORKER,
                result=reply.result,
                protocol=None,
            )
            if ended is not None:
                await session.commit()
        if ended is None:
            raise ValueError("the call was not as its send left it")
        return {"id": call.id, "run_id": run_id, "status": ended.call.status, "result": reply.result}

    return app


async def serve(upstream_url: str, database_url: str) -> None:
    engine = create_engine(database_url)
    async with ConnectionPool(request_timeout=60) as pool:
        app = build_app(session_factory(engine), pool, Endpoint.http(upstream_url))
        await serve_and_announce(app, "127.0.0.1", 0, "")
    await engine.dispose()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2])
