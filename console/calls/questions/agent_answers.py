"""What a call's agent answers itself: the server's sampling and roots requests, relayed to the agent's
client (the agent has the model and the roots). Once nothing of the round waits, the resume is queued."""

from __future__ import annotations

import json
import os
from datetime import datetime
from typing import Any

import mcp.types as types
from pydantic import ValidationError
from sqlalchemy import ColumnElement, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, fingerprint, record_event
from console.calls.models import AgentRequest, CallRound
from console.calls.moves import agent_request_may_become
from console.calls.questions.decisions import queue_resume_if_complete
from console.calls.rounds.abandon import abandon_waiting_call
from console.calls.states import AgentRequestStatus
from console.db import finds_any, utcnow
from console.errors import InvalidInput, NotFound
from console.identity import Viewer


async def pending_agent_requests(*, session: AsyncSession, call_id: str) -> list[AgentRequest]:
    """The call's requests that wait for its agent, in the server's order."""
    query = (
        select(AgentRequest)
        .where(AgentRequest.call_id == call_id, AgentRequest.status == AgentRequestStatus.PENDING)
        .order_by(AgentRequest.created_at, AgentRequest.key)
    )
    return list((await session.execute(query)).scalars())


async def answer_agent_request(
    *, session: AsyncSession, viewer: Viewer, request_id: str, response: Any
) -> bool:
    """Record the agent's answer, in the caller's transaction; False when the request was already
    answered or has ended.

    Raises:
        NotFound: no such request of the viewer's own calls.  InvalidInput: the answer has the wrong shape.
    """
    row = await session.get(AgentRequest, request_id)
    if row is None or row.owner_id != viewer.user_id:
        raise NotFound(f"no request {request_id!r}")
    _check_shape(row.method, response)
    round_ = (
        await session.execute(select(CallRound).where(CallRound.id == row.round_id).with_for_update())
    ).scalar_one()
    text = json.dumps(response)
    moved = await session.execute(
        update(AgentRequest)
        .where(AgentRequest.id == row.id, agent_request_may_become(AgentRequestStatus.ANSWERED))
        .values(status=AgentRequestStatus.ANSWERED, response_json=text, answered_at=utcnow())
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        return False
    record_event(
        session=session,
        actor=viewer.actor,
        action="agent_answered",
        subject_type="agent_request",
        subject_id=row.id,
        call_id=row.call_id,
        payload={
            "key": row.key,
            "method": row.method,
            "response": fingerprint(text),
        },  # model output stays out
    )
    await queue_resume_if_complete(session=session, round_=round_, actor=viewer.actor)
    return True


def overdue_agent_requests(now: datetime) -> ColumnElement[bool]:
    """The agent requests `expire_agent_requests` ends at `now`."""
    return (AgentRequest.status == AgentRequestStatus.PENDING) & (AgentRequest.expires_at <= now)


async def expire_agent_requests(*, session: AsyncSession, now: datetime | None = None) -> list[str]:
    """End the calls whose agent never answered the server in time (a sampling or roots request has no
    answer that means "no"), in the caller's transaction; returns their ids."""
    now = now or utcnow()
    overdue = overdue_agent_requests(now)
    if not await finds_any(session, overdue):
        return []
    due = (await session.execute(select(AgentRequest).where(overdue).limit(200))).scalars().all()
    touched: list[str] = []
    for row in due:
        moved = await session.execute(
            update(AgentRequest)
            .where(AgentRequest.id == row.id, agent_request_may_become(AgentRequestStatus.EXPIRED))
            .values(status=AgentRequestStatus.EXPIRED, answered_at=now)
        )
        if moved.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
            continue
        await abandon_waiting_call(
            session=session,
            call_id=row.call_id,
            round_id=row.round_id,
            key=row.key,
            reason=f"the agent did not answer the server's {row.method} request in time",
            actor=SYSTEM,
            now=now,
        )
        touched.append(row.call_id)
    return touched


def _check_shape(method: str, response: Any) -> None:
    """The answer is the result its request asks for, as the protocol has it (the console sends it on to
    the server as such)."""
    if not isinstance(response, dict):
        raise InvalidInput("the answer must be an object", {"response": "must be an object"})
    if method == "roots/list":
        roots = response.get("roots")
        if not isinstance(roots, list) or not all(
            isinstance(r, dict) and isinstance(r.get("uri"), str) for r in roots
        ):
            raise InvalidInput("a roots answer lists roots", {"roots": "must be a list of {uri, name?}"})
    elif not isinstance(response.get("content"), dict | list) or not isinstance(response.get("role"), str):
        raise InvalidInput("a sampling answer is a message", {"response": "needs role and content"})
    result = types.ListRootsResult if method == "roots/list" else types.CreateMessageResult
    try:
        result.model_validate(response)
    except ValidationError as exc:
        raise InvalidInput("the answer is not a valid result", dict([invalid_field(exc)])) from None


def invalid_field(exc: ValidationError) -> tuple[str, str]:
    """Where a result the protocol's types refused is wrong, and why: the field is where every way of
    reading it failed (the common part of the errors' paths), "" for the whole result."""
    errors = exc.errors()
    paths = [[str(part) for part in error["loc"]] for error in errors]
    field = ".".join(os.path.commonprefix(paths))
    reason = errors[0]["msg"] if len(errors) == 1 else "matches none of the shapes allowed there"
    return field, reason
