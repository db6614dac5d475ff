"""An agent that gave up on its own call: it cancelled it, was told it failed, or left without a word.
The call must not go on behind its back, so what still waits is withdrawn and the call ends `abandoned`;
a request the server already holds cannot be taken back, and the audit log says so."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.calls.service import abandon_rows, is_terminal, view_call
from console.calls.states import CallStatus
from console.identity import Principal

CANCELLED = "the agent cancelled"


def told_failed(message: str) -> str:
    """The reason for a call whose agent was told it failed with `message` (the server's text, cut short)."""
    return f"the agent was told the call failed: {message[:200]}"


def left_reason(grace: float) -> str:
    """The reason for a call whose agent's connection closed and did not come back within `grace` s."""
    return f"the agent's connection closed and it did not come back within {grace:g} s"


async def withdraw_for_agent(
    *, session: AsyncSession, principal: Principal, call_id: str, reason: str
) -> str:
    """End the agent's own call `abandoned` with `reason` unless it already ended, in the caller's
    transaction; what became of it:
    `abandoned`, `already_sent` (under way at the server: left to finish, recorded) or its final status.

    Raises:
        NotFound: the call is not in a run of the principal's.
    """
    view = await view_call(
        session=session, viewer=principal.viewer, call_id=call_id, attempt="withdraw", own=True
    )
    call = view.call
    if is_terminal(call.status):
        return call.status
    sent = call.round > 0 or call.status != CallStatus.AWAITING_INPUT
    consequence = "nothing was sent to the server"
    if sent:
        consequence = "it had reached the server, " + (
            "which is asked to cancel its task" if call.task_id else "which is told nothing more"
        )
    said = (
        "The agent cancelled this call"
        if reason == CANCELLED
        else f"The agent gave up on this call ({reason})"
    )
    error = {"message": f"{said}; {consequence}.", "withdrawn_by_agent": True, "reason": reason}
    payload = {"reason": reason, "by": "agent", "sent_to_server": sent}
    if await abandon_rows(
        session=session, call_id=call_id, actor=principal.actor, error=error, payload=payload
    ):
        return "abandoned"
    record_event(  # running or resuming: the server has the request, which cannot be unsent
        session=session,
        actor=principal.actor,
        action="call_withdrawal_too_late",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"reason": reason, "status": call.status},
    )
    return "already_sent"
