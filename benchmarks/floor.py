"""B6's floor: the least an MCP gateway that records every call durably must do, and nothing more.

`python -m benchmarks.floor UPSTREAM_URL [DATABASE_FILE]` serves Streamable HTTP with the SDK's server
(as the console's `/mcp` does) and prints `listening on URL`; it forwards each `tools/call` with the
console's own `ConnectionPool`. With a database file it also accepts only the bearer token in
`FLOOR_TOKEN`, looked up in the database on each HTTP request, and a `tools/call` commits a `running`
row before it is forwarded and the outcome on that row before it is answered. That runs on the
console's SQLite engine (`console.db.create_engine`: WAL, durable commits, write-locking transactions)
with statements built once: no policies, audit chain, runs, ORM or wake-ups.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from sqlalchemy import Column, MetaData, String, Table, Text, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.types import ASGIApp, Receive, Scope, Send

from console.db import create_engine
from console.listening import serve_and_announce
from console.mcp.endpoint import Complete, Endpoint, McpRequest
from console.mcp.pool import ConnectionPool

METADATA = MetaData()
TOKENS = Table("floor_token", METADATA, Column("hash", String(64), primary_key=True))
CALLS = Table(
    "floor_call",
    METADATA,
    Column("id", String(32), primary_key=True),
    Column("params", Text, nullable=False),
    Column("status", String(20), nullable=False),
    Column("result", Text),
)
TOKEN_KNOWN = select(TOKENS.c.hash).where(TOKENS.c.hash == bindparam("hash"))
CALL_STARTED = insert(CALLS)
CALL_ENDED = update(CALLS).where(CALLS.c.id == bindparam("call_id"))


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def set_up(engine: AsyncEngine, token: str) -> None:
    """The floor's tables, and `token` among the known ones (B4 starts several floors on one database)."""
    async with engine.begin() as connection:
        await connection.run_sync(METADATA.create_all)
        if (await connection.execute(TOKEN_KNOWN, {"hash": digest(token)})).first() is None:
            await connection.execute(insert(TOKENS), {"hash": digest(token)})


async def token_known(engine: AsyncEngine, token: str) -> bool:
    async with engine.begin() as connection:
        found = await connection.execute(TOKEN_KNOWN, {"hash": digest(token)})
        return found.first() is not None


async def recorded_send(
    engine: AsyncEngine | None, pool: ConnectionPool, upstream: Endpoint, params: dict[str, Any]
) -> tuple[str, Any]:
    """Forward a `tools/call`, with a `running` row committed before and its outcome after (with an
    engine); the row's id and the result."""
    call_id = secrets.token_hex(16)
    if engine is not None:
        async with engine.begin() as connection:
            started = {"id": call_id, "params": json.dumps(params), "status": "running"}
            await connection.execute(CALL_STARTED, started)
    reply = await pool.send(upstream, McpRequest("tools/call", params))
    if not isinstance(reply, Complete):
        raise ValueError("the floor forwards calls that complete at once")
    if engine is not None:
        async with engine.begin() as connection:
            ended = {"call_id": call_id, "status": "completed", "result": json.dumps(reply.result)}
            await connection.execute(CALL_ENDED, ended)
    return call_id, reply.result


class BearerChecked:
    """The HTTP requests whose bearer token is in the table reach `app`; the rest get a 401."""

    def __init__(self, app: ASGIApp, engine: AsyncEngine) -> None:
        self._app = app
        self._engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not await self._known(scope):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self._app(scope, receive, send)

    async def _known(self, scope: Scope) -> bool:
        header = dict(scope["headers"]).get(b"authorization", b"").decode()
        return await token_known(self._engine, header.removeprefix("Bearer "))


def build_server(engine: AsyncEngine | None, pool: ConnectionPool, upstream: Endpoint) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult.model_validate({"tools": await pool.list_tools(upstream)})

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        forwarded = {"name": params.name, "arguments": params.arguments or {}}
        _, result = await recorded_send(engine, pool, upstream, forwarded)
        return types.CallToolResult.model_validate(result)

    return Server("floor", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(upstream_url: str, database_file: str | None) -> None:
    engine = None if database_file is None else create_engine(f"sqlite+aiosqlite:///{database_file}")
    if engine is not None:
        await set_up(engine, os.environ["FLOOR_TOKEN"])
    async with ConnectionPool(request_timeout=60) as pool:
        server = build_server(engine, pool, Endpoint.http(upstream_url))
        app: ASGIApp = server.streamable_http_app(host="127.0.0.1")
        if engine is not None:
            app = BearerChecked(app, engine)
        await serve_and_announce(app, "127.0.0.1", 0, "/mcp")
    if engine is not None:
        await engine.dispose()


if __name__ == "__main__":
    anyio.run(serve, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
