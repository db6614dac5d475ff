"""Gates: a tool call that the team's policy gates waits for approval before anything is sent.

The gate is the call's round 0, the console's own: one question (mode "gate") under the policy that put
the gate in place. Approved, the call is sent once, with the arguments the approvers approved (changed,
where the rule lets them); declined, cancelled or expired, it ends without reaching the server, and the
agent learns who decided and why (console/calls/questions/decisions.py).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.models import Call, CallRound, Elicitation, Run
from console.calls.moves import move_call
from console.calls.notices import announce
from console.calls.rounds.asking import canonical_json, keep_policy, request_digest, shown_digest
from console.calls.states import CallStatus, QuestionMode, QuestionStatus, RoundStatus
from console.calls.summary import summarise_call
from console.config import Settings
from console.db import utcnow
from console.mcp.connection import ListedTool
from console.policies.rules import gate_rule
from console.policies.service import Resolved

GATE_METHOD = "io.approval-console/gate"
GATE_KEY = "gate"
MAX_DESCRIPTION = 4_000  # characters of the tool's description kept for the page
MAX_TITLE = 200  # characters of the tool's title kept (the page's details show it beside the tool's name)
MAX_SCHEMA = 256 * 1024  # characters of the tool's inputSchema kept; a larger one cannot be edited against


def gate_request(tool: str, listed: ListedTool | None) -> dict[str, Any]:
    """What the gate question shows of the tool besides the call's own arguments, as its round keeps it."""
    description = (listed.description or "") if listed is not None else ""
    schema = listed.input_schema if listed is not None else None
    if schema is not None and len(json.dumps(schema)) > MAX_SCHEMA:
        schema = None
    return {
        "method": GATE_METHOD,
        "params": {
            "tool": tool,
            "title": ((listed.title or "") if listed is not None else "")[:MAX_TITLE] or None,
            "description": description[:MAX_DESCRIPTION],
            "annotations": listed.annotations if listed is not None else None,
            "inputSchema": schema,
        },
    }


async def open_gate(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    server: str,
    listed: ListedTool | None,
    resolved: Resolved,
    settings: Settings,
    actor: Actor,
) -> Elicitation:
    """Put the call behind its gate: round 0 with its one question, the call awaiting input. The caller
    commits."""
    params = json.loads(call.params_json)
    request = gate_request(params["name"], listed)
    round_ = CallRound(
        call_id=call.id, n=0, input_requests_json=json.dumps({GATE_KEY: request}), status=RoundStatus.OPEN
    )
    session.add(round_)
    await session.flush()
    policy = resolved.policy
    ttl = (
        timedelta(minutes=policy.expiry_minutes)
        if policy.expiry_minutes is not None
        else timedelta(seconds=settings.elicitation_ttl_seconds)
    )
    question = Elicitation(
        round_id=round_.id,
        call_id=call.id,
        team_id=run.team_id,
        owner_id=run.owner_id,
        key=GATE_KEY,
        mode=QuestionMode.GATE,
        message=summarise_call(params["name"], params.get("arguments")).question(),
        schema_json=json.dumps(request["params"]["inputSchema"]) if policy.allow_edit else None,
        request_digest=request_digest(request),
        digest=shown_digest(
            server=server, method=call.method, params=params, round_n=0, key=GATE_KEY, request=request
        ),
        status=QuestionStatus.PENDING,
        expires_at=utcnow() + ttl,
    )
    keep_policy(question, resolved)
    session.add(question)
    move_call(call, CallStatus.AWAITING_INPUT)
    await session.flush()
    await announce(session=session, settings=settings, call=call, server=server, questions=[question])
    rule = gate_rule(resolved.applied) or {}
    record_event(
        session=session,
        actor=actor,
        action="gate_opened",
        subject_type="elicitation",
        subject_id=question.id,
        call_id=call.id,
        payload={"rule": rule.get("rule"), "from": rule.get("from"), "allow_edit": question.allow_edit},
    )
    return question


async def waiting_at_gate(
    session: AsyncSession, run_id: str, server_id: str, method: str, params_text: str
) -> Call | None:
    """The run's call with exactly these params that still waits at its gate, if any."""
    query = select(Call).where(
        Call.run_id == run_id,
        Call.server_id == server_id,
        Call.method == method,
        Call.status == CallStatus.AWAITING_INPUT,
        Call.round == 0,
        Call.params_json == params_text,
    )
    return (await session.execute(query.limit(1))).scalar_one_or_none()


def approved_params(params_json: str, arguments: Any) -> str | None:
    """The params to send after approvers approved `arguments`: None when they are the agent's own
    (its params then go out byte for byte), else the params with the approved arguments."""
    params = json.loads(params_json)
    if canonical_json(arguments) == canonical_json(params.get("arguments") or {}):
        return None
    return json.dumps({**params, "arguments": arguments}, ensure_ascii=False)
