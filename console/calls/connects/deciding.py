"""Answering a connect question (console/calls/connects/parking.py): it is accepted once its owner holds a
grant for the server, and the decided question either sends the parked request again or ends the call,
telling the agent why."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.connects.parking import parked_job, send_parked_again
from console.calls.models import Call, CallRound, Elicitation
from console.calls.moves import move_job
from console.calls.rounds.ended import end_at_console_round
from console.calls.states import CallStatus, JobStatus, QuestionStatus
from console.calls.tasks import cancel_task_of
from console.db import get_row, utcnow
from console.errors import InvalidInput
from console.mcp.challenge import Challenge
from console.mcp.models import McpServer
from console.oauth.grants import holds_grant


def kept_challenge(asked: dict[str, Any]) -> Challenge | None:
    """The server's challenge a connect question keeps (its request's params), to ask for its scopes."""
    kept = asked.get("challenge")
    if not isinstance(kept, dict):
        return None
    text = {
        k: v if isinstance(v := kept.get(k), str) else None for k in ("resource_metadata", "scope", "error")
    }
    status = kept.get("status")
    return Challenge(status=status if isinstance(status, int) else 401, **text)


async def server_of(session: AsyncSession, elicitation: Elicitation) -> str:
    """The id of the server the question's call goes to."""
    query = select(Call.server_id).where(Call.id == elicitation.call_id)
    return (await session.execute(query)).scalar_one()


async def owner_connected(session: AsyncSession, elicitation: Elicitation) -> bool:
    """Whether the question's owner holds a grant for its call's server now."""
    server_id = await server_of(session, elicitation)
    return await holds_grant(session=session, user_id=elicitation.owner_id, server_id=server_id)


async def check_connected(session: AsyncSession, elicitation: Elicitation, content: Any) -> None:
    """A connect question is accepted with no content, and only once its owner is connected.

    Raises:
        InvalidInput: content was given, or the owner has not connected their account yet.
    """
    if content is not None:
        raise InvalidInput("invalid answer", {"content": "a connect question is accepted without content"})
    if not await owner_connected(session, elicitation):
        raise InvalidInput(
            "not connected yet",
            {"action": "connect the account first: open the question in the console and press Connect"},
        )


async def pass_connect(
    *, session: AsyncSession, round_: CallRound, question: Elicitation, actor: Actor
) -> bool:
    """Apply the decided connect question of `round_` (locked, just marked ready); True when the parked
    request was queued again. The caller commits."""
    call = await get_row(session, Call, round_.call_id)
    parked = await parked_job(session, call.id)
    now = utcnow()
    if question.status == QuestionStatus.ACCEPTED and parked is not None:
        send_parked_again(parked, call, round_, now)
        record_event(
            session=session,
            actor=actor,
            action="connect_done",
            subject_type="elicitation",
            subject_id=question.id,
            call_id=call.id,
            payload={"round": round_.n, "job": parked.kind},
        )
        return True
    if parked is not None:
        move_job(parked, JobStatus.DONE)
    declined = question.status == QuestionStatus.DECLINED or (
        question.status == QuestionStatus.EXPIRED and question.expiry_action == "decline"
    )
    status = CallStatus.DECLINED if declined else CallStatus.CANCELLED
    error = await _why_it_ended(session, question, call, status)
    end_at_console_round(session=session, call=call, round_=round_, status=status, error=error, actor=actor)
    await cancel_task_of(session=session, call_id=call.id)
    return False


async def _why_it_ended(
    session: AsyncSession, question: Elicitation, call: Call, status: CallStatus
) -> dict[str, Any]:
    server = (
        await session.execute(select(McpServer.name).where(McpServer.id == call.server_id))
    ).scalar_one()
    if question.status == QuestionStatus.EXPIRED:
        message = f"The account at {server} was not connected in time, so the call was {status}."
    else:
        said = "declined" if question.status == QuestionStatus.DECLINED else "cancelled"
        message = f"The account at {server} was not connected (its owner {said}), so the call was {status}."
    return {"message": message, "at_connect": True, "reason": question.status}
