"""What the console tells a server it answers besides elicitation, for one call: what the call's agent
answers itself (the gateway relays sampling and roots to it), and sampling when the team's policy let
people write the model's reply when the call started. (Roots an admin set travel with the endpoint:
console/mcp/roots.py.) And the policy a call's request is under."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Call
from console.mcp.endpoint import SAMPLING
from console.policies.service import Resolved, resolve_for_request


def declared(call: Call) -> frozenset[str]:
    """What every request of the call tells the server the console answers besides elicitation."""
    relayed = relayed_of(call)
    return relayed | {SAMPLING} if call.people_sample else relayed


def relayed_of(call: Call) -> frozenset[str]:
    """The input requests the call's agent answers itself (none for calls made through the API)."""
    return frozenset(json.loads(call.relayed_json)) if call.relayed_json else frozenset()


async def policy_for(
    *,
    session: AsyncSession,
    team_id: str,
    server_id: str,
    method: str,
    params: dict[str, Any],
    annotations: dict[str, Any] | None,
) -> Resolved:
    """The team's policy for one request (a tool call's by its tool, annotations and arguments)."""
    arguments = params.get("arguments")
    return await resolve_for_request(
        session=session,
        team_id=team_id,
        server_id=server_id,
        method=method,
        tool=params.get("name") if method == "tools/call" else None,
        annotations=annotations,
        arguments=arguments if isinstance(arguments, dict) else None,
    )


async def policy_of_call(*, session: AsyncSession, call: Call, team_id: str) -> Resolved:
    """The team's policy for the request the call sends (its approved params, when a gate changed them)."""
    return await policy_for(
        session=session,
        team_id=team_id,
        server_id=call.server_id,
        method=call.method,
        params=json.loads(call.sent_params_json),
        annotations=json.loads(call.tool_annotations_json) if call.tool_annotations_json else None,
    )
