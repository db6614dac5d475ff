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
import secrets
import sys
from typing import Any

import anyio
from fastapi import FastAPI, HTTPException, Request
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.floor import CALL_ENDED, CALL_STARTED, METADATA, TOKEN_KNOWN, TOKENS, digest
from console.db import create_engine
from console.listening import serve_and_announce
from console.mcp.endpoint import Complete, Endpoint, McpRequest
from console.mcp.pool import ConnectionPool


def build_app(engine: AsyncEngine, pool: ConnectionPool, upstream: Endpoint) -> FastAPI:
    app = FastAPI()

    @app.post("/api/v1/runs/{run_id}/calls")
    async def start_call(run_id: str, request: Request) -> dict[str, Any]:
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        async with engine.begin() as connection:
            known = (await connection.execute(TOKEN_KNOWN, {"hash": digest(token)})).first()
        if known is None:
            raise HTTPException(status_code=401)
        params = json.loads(await request.body())["params"]
        call_id = secrets.token_hex(16)
        async with engine.begin() as connection:
            started = {"id": call_id, "params": json.dumps(params), "status": "running"}
            await connection.execute(CALL_STARTED, started)
        reply = await pool.send(upstream, McpRequest("tools/call", params))
        if not isinstance(reply, Complete):
            raise ValueError("the floor forwards calls that complete at once")
        async with engine.begin() as connection:
            ended = {"call_id": call_id, "status": "completed", "result": json.dumps(reply.result)}
            await connection.execute(CALL_ENDED, ended)
        return {"id": call_id, "run_id": run_id, "status": "completed", "result": reply.result}

    return app


async def serve(upstream_url: str, database_url: str) -> None:
    engine = create_engine(database_url)
    async with engine.begin() as connection:
        await connection.run_sync(METADATA.create_all)
        token = {"hash": digest(os.environ["FLOOR_TOKEN"])}
        if (await connection.execute(TOKEN_KNOWN, token)).first() is None:  # B4 starts several on one
            await connection.execute(insert(TOKENS), token)
    async with ConnectionPool(request_timeout=60) as pool:
        app = build_app(engine, pool, Endpoint.http(upstream_url))
        await serve_and_announce(app, "127.0.0.1", 0, "")
    await engine.dispose()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2])
