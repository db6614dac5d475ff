"""The console as a client under the official MCP conformance suite.

The suite starts `python -m console.conformance <server-url>` with MCP_CONFORMANCE_SCENARIO (and for
some scenarios MCP_CONFORMANCE_CONTEXT) set. This drives the console's own client path against that
server: a throwaway SQLite database, the server registered over HTTP, calls started with the same
service functions the API uses, the dispatcher sending them over the connection pool, and every form
question answered by a scripted person (accept, filled with the schema's defaults; links: accept).
Exit status 0 once every call the scenario needs completed, 1 with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console import migrate
from console.calls.models import Elicitation
from console.calls.service import create_run, start_call, view_call
from console.config import Settings
from console.db import create_engine, session_factory
from console.dispatch.signals import Signals
from console.dispatch.worker import Dispatcher
from console.elicitations.decisions import answer
from console.errors import ConsoleError
from console.identity import Principal, authenticate_token, create_team, create_token, create_user
from console.mcp.admin import ServerSettings, create_server
from console.mcp.pool import ConnectionPool
from console.mcp.registry import endpoint_for, server_by_name
from console.mcp.sealed import Outbound

TEAM = "conformance"
SERVER = "scenario"
CALL_TIMEOUT_SECONDS = 20.0
# The MRTR scenario grades four tools, called one after another (the unrelated one between two flows).
MRTR_TOOLS = ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type")
SCHEMA_ECHO = ("json_schema_echo", "json_schema_2020_12_tool")


class ScenarioFailed(Exception):
    """The scenario's calls could not be completed; the message says why."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


def form_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """An accepting answer: each property's default, and a plain value for required ones without one."""
    content: dict[str, Any] = {}
    required = set(schema.get("required") or ())
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            content[name] = prop["default"]
        elif name in required:
            content[name] = _plain_value(prop)
    return content


def _plain_value(prop: dict[str, Any]) -> Any:
    if prop.get("enum"):
        return prop["enum"][0]
    if prop.get("oneOf"):
        return prop["oneOf"][0].get("const")
    kind = prop.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return prop.get("minimum", 0)
    if kind == "array":
        items = prop.get("items") or {}
        options = items.get("enum") or [o.get("const") for o in items.get("anyOf") or []]
        return options[: max(1, prop.get("minItems", 1))]
    return "x" * max(1, prop.get("minLength", 1))


def sample_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a listed tool: a plain value for each required property."""
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or ())
    return {
        name: _plain_value(prop)
        for name, prop in (schema.get("properties") or {}).items()
        if name in required and isinstance(prop, dict)
    }


def plan(scenario: str, context: dict[str, Any], tools: list[dict[str, Any]]) -> list[ToolCall]:
    """Which tools/call requests the scenario expects, given the tools the server listed."""
    listed = {tool["name"]: tool for tool in tools}
    if scenario == "sep-2322-client-request-state":
        return [ToolCall(name, {}) for name in MRTR_TOOLS]
    if "toolCalls" in context:
        return [ToolCall(c["name"], dict(c.get("arguments") or {})) for c in context["toolCalls"]]
    if scenario == "tools_call":
        return [ToolCall("add_numbers", {"a": 2, "b": 3})]
    echo, focal = SCHEMA_ECHO
    if echo in listed and focal in listed:
        return [ToolCall(echo, {"schema": listed[focal]["inputSchema"]})]
    if scenario == "json-schema-ref-no-deref":
        return []  # listing the tools is the whole scenario; the pool has done it
    return [ToolCall(name, sample_arguments(tool)) for name, tool in listed.items()]


class Harness:
    """The console's client path on one database, with a scripted person answering every question."""

    def __init__(self, factory: async_sessionmaker[AsyncSession], settings: Settings, pool: ConnectionPool):
        self._factory = factory
        self._settings = settings
        self._pool = pool
        self.signals = Signals()

    async def seed(self, url: str) -> Principal:
        """A team, its member (who owns the run and answers) and the scenario's server."""
        async with self._factory() as session:
            team = await create_team(session=session, name=TEAM)
            await create_user(session=session, name="agent", team_name=TEAM, role="member")
            token = await create_token(session=session, user_name="agent", team_name=TEAM)
            await create_server(
                session=session,
                by=None,
                team_name=team.name,
                name=SERVER,
                settings=ServerSettings(transport="http", url=url, internal=True),  # the suite runs locally
                outbound=Outbound.of(self._settings),
            )
            return await authenticate_token(session=session, token=token)

    async def listed_tools(self, principal: Principal) -> list[dict[str, Any]]:
        async with self._factory() as session:
            server = await server_by_name(session=session, team_id=principal.team_id, name=SERVER)
            await session.commit()
        return await self._pool.list_tools(endpoint_for(server, Outbound.of(self._settings)))

    async def call(
        self, principal: Principal, tool: ToolCall, *, check_listed: bool = True
    ) -> dict[str, Any]:
        """Start the call as the API would, answer its questions, and return its result once complete."""
        body = json.dumps(
            {
                "server": SERVER,
                "method": "tools/call",
                "params": {"name": tool.name, "arguments": tool.arguments},
            }
        )
        async with self._factory() as session:
            run = await create_run(
                session=session, principal=principal, team=TEAM, title=tool.name, agent="conformance"
            )
            started = await start_call(
                session=session,
                principal=principal,
                settings=self._settings,
                pool=self._pool if check_listed else None,
                run_id=run.id,
                body_text=body,
            )
        self.signals.work_available()
        with anyio.fail_after(CALL_TIMEOUT_SECONDS):
            return await self._settle(principal, started.call.id)

    async def _settle(self, principal: Principal, call_id: str) -> dict[str, Any]:
        while True:
            marker = self.signals.call_marker(call_id)
            async with self._factory() as session:
                call = (await view_call(session=session, viewer=principal.viewer, call_id=call_id)).call
            if call.status == "completed":
                result: dict[str, Any] = json.loads(call.result_json or "{}")
                return result
            if call.status == "awaiting_input":
                await self._answer_all(principal, call_id)
            elif call.status not in ("running", "resuming"):
                raise ScenarioFailed(f"call ended {call.status}: {call.error_json}")
            await self.signals.wait_for_call(call_id, 0.2, since=marker)

    async def _answer_all(self, principal: Principal, call_id: str) -> None:
        async with self._factory() as session:
            pending = (
                (
                    await session.execute(
                        select(Elicitation).where(
                            Elicitation.call_id == call_id, Elicitation.status == "pending"
                        )
                    )
                )
                .scalars()
                .all()
            )
            await session.commit()
        for question in pending:
            content = None
            if question.mode == "form":
                content = form_defaults(json.loads(question.schema_json or "{}"))
            async with self._factory() as session:
                decision = await answer(
                    session=session,
                    viewer=principal.viewer,
                    elicitation_id=question.id,
                    action="accept",
                    content=content,
                )
            if decision.resume_queued:
                self.signals.work_available()


async def run_scenario(url: str, scenario: str, context: dict[str, Any], database_url: str) -> list[str]:
    """Run the scenario's calls through the console; the text of each result, in order."""
    settings = Settings(database_url=database_url, dispatch_poll_seconds=0.2, request_timeout_seconds=15)
    engine = create_engine(database_url)
    factory = session_factory(engine)
    texts: list[str] = []
    try:
        async with ConnectionPool(request_timeout=settings.request_timeout_seconds) as pool:
            harness = Harness(factory, settings, pool)
            principal = await harness.seed(url)
            # The suite's mock servers check no approvals: its sends go unsigned.
            dispatcher = Dispatcher(
                factory=factory, pool=pool, settings=settings, signals=harness.signals, attester=None
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(dispatcher.run)
                tools = await harness.listed_tools(principal)
                for tool in plan(scenario, context, tools):
                    listed = any(t["name"] == tool.name for t in tools)
                    result = await harness.call(principal, tool, check_listed=listed)
                    texts.append(_text(result))
                tg.cancel_scope.cancel()
    finally:
        await engine.dispose()
    return texts


def _text(result: dict[str, Any]) -> str:
    parts = result.get("content") or []
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)) or json.dumps(result)


def _reasons(exc: BaseException) -> list[str]:
    """The leaf errors, one line each; a group of anything else is re-raised (a bug, not a failed call)."""
    if isinstance(exc, BaseExceptionGroup):
        failures, rest = exc.split((ScenarioFailed, ConsoleError, TimeoutError))
        if rest is not None or failures is None:
            raise exc
        return [reason for leaf in failures.exceptions for reason in _reasons(leaf)]
    return [str(exc) or type(exc).__name__]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m console.conformance <server-url>", file=sys.stderr)  # noqa: T201  # CLI output
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="console-conformance-") as folder:
        database_url = f"sqlite+aiosqlite:///{Path(folder) / 'console.db'}"
        migrate.upgrade(database_url)
        try:
            texts = anyio.run(run_scenario, args[0], scenario, context, database_url)
        except (ScenarioFailed, ConsoleError, TimeoutError, BaseExceptionGroup) as exc:
            for reason in _reasons(exc):
                print(f"conformance client: {scenario}: {reason}", file=sys.stderr)  # noqa: T201  # CLI output
            return 1
    for text in texts:
        print(text)  # noqa: T201  # CLI output
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
