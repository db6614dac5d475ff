"""Whether to pin a server that speaks both MCP versions to 2025-11-25: it said, in the result of a recent
call, that it cannot push a question on a 2026-07-28 connection (fastmcp 4's `ctx.elicit` fails so), and
a connection offering only 2025-11-25 works.

What a server says is untrusted text: it only ever picks this advice, never what the console does.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call
from console.calls.states import CallStatus
from console.db import utcnow
from console.mcp.models import McpServer
from console.mcp.probe import ProbeOutcome, connects
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound
from console.transactions import end_read

NEWER, OLDER = "2026-07-28", "2025-11-25"
RECENT = timedelta(days=7)
LOOKED_AT = 200  # the newest calls read for it


def says_it_cannot_push(result_json: str | None) -> bool:
    """Whether a tool result is an error saying a question cannot be pushed on 2026-07-28."""
    try:
        result = json.loads(result_json or "null")
    except ValueError:
        return False
    if not isinstance(result, dict) or result.get("isError") is not True:
        return False
    content = result.get("content")
    items = content if isinstance(content, list) else []
    said = " ".join(
        i["text"] for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)
    ).lower()
    return NEWER in said and ("elicit" in said or "server-initiated" in said)


async def pin_advice(*, session: AsyncSession, server: McpServer, team_name: str) -> str | None:
    """The advice to pin `server` to 2025-11-25, with the command, when a recent call of its ended with
    the server saying it cannot push questions on 2026-07-28; else None."""
    results = (
        await session.execute(
            select(Call.result_json)
            .where(
                Call.server_id == server.id,
                Call.status == CallStatus.COMPLETED,
                Call.created_at >= utcnow() - RECENT,
                Call.result_json.contains(NEWER),
            )
            .order_by(Call.created_at.desc())
            .limit(LOOKED_AT)
        )
    ).scalars()
    failed = sum(1 for result in results if says_it_cannot_push(result))
    if not failed:
        return None
    names = f"{shlex.quote(team_name)} {shlex.quote(server.name)}"
    command = f"console servers edit {names} --protocol-version {OLDER}"
    calls = "a recent call" if failed == 1 else f"{failed} recent calls"
    return (
        f"{calls} failed because the server cannot push a question on MCP {NEWER}: pin it to {OLDER}, "
        f"where the questions it pushes are held for people to answer: {command}"
    )


async def with_pin_advice(
    *, session: AsyncSession, server: McpServer, team_name: str, outcome: ProbeOutcome, outbound: Outbound
) -> ProbeOutcome:
    """A test connection's outcome, with the advice to pin the server to 2025-11-25 when it spoke
    2026-07-28 unpinned, a recent call says it cannot push questions there, and it speaks 2025-11-25 too."""
    if not outcome.ok or outcome.protocol != NEWER or server.pinned_protocol is not None:
        return outcome
    advice = await pin_advice(session=session, server=server, team_name=team_name)
    await end_read(session)  # no transaction stays open while the server is reached again
    if advice is None or not await connects(replace(endpoint_for(server, outbound), protocol=OLDER)):
        return outcome
    return replace(outcome, notes=[*outcome.notes, advice])
