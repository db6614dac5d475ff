"""B1's floor: the least an HTTP API that records every call durably must do, and nothing more.

`python -m benchmarks.floor_api UPSTREAM_URL DATABASE_URL` serves one FastAPI route, the console's
`POST /api/v1/runs/{run_id}/calls`, and prints `listening on URL`. Per request it looks the bearer token
(`FLOOR_TOKEN`) up in the database, commits a `running` row, forwards the body's `params` as a
`tools/call` with the console's own `ConnectionPool`, commits the outcome on that row and answers JSON.
It runs on the console's engine (`console.db.create_engine`; on SQLite: WAL, durable commits,
write-locking transactions) with the tables and statements of B6's floor (benchmarks/floor.py): no
policies, audit chain, runs, ORM, dispatcher or wake-ups.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from fastapi import FastAPI, HTTPException, Request
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.floor import recorded_send, set_up, token_known
from console.db import create_engine
from console.listening import serve_and_announce
from console.mcp.endpoint import Endpoint
from console.mcp.pool import ConnectionPool


def build_app(engine: AsyncEngine, pool: ConnectionPool, upstream: Endpoint) -> FastAPI:
    app = FastAPI()

    @app.post("/api/v1/runs/{run_id}/calls")
    async def start_call(run_id: str, request: Request) -> dict[str, Any]:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        if not await token_known(engine, token):
            raise HTTPException(status_code=401)
        params = json.loads(await request.body())["params"]
        call_id, result = await recorded_send(engine, pool, upstream, params)
        return {"id": call_id, "run_id": run_id, "status": "completed", "result": result}

    return app


async def serve(upstream_url: str, database_url: str) -> None:
    engine = create_engine(database_url)
    await set_up(engine, os.environ["FLOOR_TOKEN"])
    async with ConnectionPool(request_timeout=60) as pool:
        app = build_app(engine, pool, Endpoint.http(upstream_url))
        await serve_and_announce(app, "127.0.0.1", 0, "")
    await engine.dispose()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2])
