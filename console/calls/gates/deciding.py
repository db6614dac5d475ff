"""Answering a gate (console/calls/gates/opening.py): who may approve, what an approval or a decline carries,
and the decided gate: the call is sent with the approved arguments, or it ends where it stands, telling the
agent who decided and why."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.calls.declared import policy_for
from console.calls.gates.opening import approved_params
from console.calls.models import Call, CallRound, DispatchJob, Elicitation
from console.calls.moves import move_call
from console.calls.rounds.asking import canonical_json
from console.calls.rounds.ended import end_at_console_round
from console.calls.states import CallStatus, JobKind, JobStatus, QuestionMode, QuestionStatus
from console.db import get_row, utcnow
from console.errors import InvalidInput, NotFound
from console.forms.arguments import argument_errors
from console.identity import Viewer
from console.identity.models import User
from console.policies.rules import DECIDERS, Policy, contradiction, describe_rule, strictest_deciders

GATE_ROUND = 0  # the round number of a call's gate
MAX_REASON = 1_000  # characters of a decline's reason
# How a gate's answer ends the call; None: as its expiry action says.
ENDED = {
    QuestionStatus.DECLINED: CallStatus.DECLINED,
    QuestionStatus.CANCELLED: CallStatus.CANCELLED,
    QuestionStatus.EXPIRED: None,
}


def owner_token_refusal(viewer: Viewer) -> str | None:
    """Why the run's owner may not approve their own gated call here: an API token is what their agent
    holds, so their approval must come from a person signed in to the console."""
    if viewer.web_session_id is not None:
        return None
    return (
        "the run's owner approves their own gated call in the console, not with an API token an agent holds"
    )


def decline_reason(elicitation: Elicitation, action: str, reason: str | None) -> str | None:
    """A gate decline's reason, as the question keeps it (its content)."""
    if reason is None:
        return None
    if elicitation.mode != QuestionMode.GATE or action != "decline":
        raise InvalidInput("invalid answer", {"reason": "only a gate question's decline takes a reason"})
    reason = reason.strip()
    if len(reason) > MAX_REASON:
        raise InvalidInput("invalid answer", {"reason": f"at most {MAX_REASON} characters"})
    return json.dumps({"reason": reason}, ensure_ascii=False) if reason else None


async def approved_arguments(session: AsyncSession, elicitation: Elicitation, content: Any) -> str:
    """The arguments a gate's accept approves, as its content: the agent's own unless the content
    changes them, which the question's policy must allow and the tool's inputSchema must take."""
    call = await session.get(Call, elicitation.call_id)
    if call is None:
        raise NotFound(f"no call {elicitation.call_id!r}")
    asked = json.loads(call.params_json).get("arguments") or {}
    if content is None or content == {}:
        arguments = asked
    elif not isinstance(content, dict) or set(content) != {"arguments"}:
        raise InvalidInput(
            "invalid answer", {"content": 'a gate is approved as sent, or with {"arguments": {…}}'}
        )
    else:
        arguments = content["arguments"]
        changed = canonical_json(arguments) != canonical_json(asked)
        if changed and not elicitation.allow_edit:
            reason = "this gate's policy lets approvers approve the arguments as sent, not change them"
            raise InvalidInput("invalid answer", {"content.arguments": reason})
        errors = argument_errors(json.loads(elicitation.schema_json or "null"), arguments) if changed else {}
        if errors:
            raise InvalidInput(
                "the arguments do not fit the tool", {f"content.{k}": v for k, v in errors.items()}
            )
    return json.dumps({"arguments": arguments}, separators=(",", ":"), ensure_ascii=False)


async def hold_edit_to_its_rules(
    *, session: AsyncSession, actor: Actor, elicitation: Elicitation, approved_json: str
) -> str | None:
    """When a gate's accept changes the arguments, the team's policy is resolved again for the changed
    ones, and the question is raised to whatever of it is stricter: who decides, how many, no
    self-approval, how recent a sign-in (recorded as `gate_policy_raised`, kept in its `policy_json`
    for the page). Returns the rules that raised it, as people read them; None when nothing is
    stricter. The caller checks the deciding person again and commits.

    Raises:
        InvalidInput: under the stricter rules nobody could approve the changed arguments.
    """
    call = await get_row(session, Call, elicitation.call_id)
    params = json.loads(call.params_json)
    asked, approved = params.get("arguments") or {}, json.loads(approved_json)["arguments"]
    if canonical_json(approved) == canonical_json(asked):
        return None
    resolved = await policy_for(
        session=session,
        team_id=elicitation.team_id,
        server_id=call.server_id,
        method=call.method,
        params={**params, "arguments": approved},
        annotations=json.loads(call.tool_annotations_json) if call.tool_annotations_json else None,
    )
    current = Policy(
        answerers=elicitation.answerers,
        no_self_approval=elicitation.no_self_approval,
        required_approvals=elicitation.required_approvals,
        step_up_minutes=elicitation.step_up_minutes,
    )
    raised = strictest_deciders(current, resolved.policy)
    changed = {
        name: getattr(raised, name) for name in DECIDERS if getattr(raised, name) != getattr(current, name)
    }
    if not changed:
        return None
    sources = "; ".join(str(layer["from"]) for layer in resolved.applied if set(layer["set"]) & set(changed))
    impossible = contradiction(raised)
    if impossible is not None:
        reason = f"the changed arguments fall under stricter rules ({sources}), under which {impossible}"
        raise InvalidInput("the changed arguments cannot be approved", {"content.arguments": reason})
    before = {name: getattr(current, name) for name in changed}
    for name, value in changed.items():
        setattr(elicitation, name, value)
    kept = json.loads(elicitation.policy_json)
    kept["raised_by_edit"] = {"from": sources, "set": changed, "lines": describe_rule(changed)}
    elicitation.policy_json = json.dumps(kept)
    record_event(
        session=session,
        actor=actor,
        action="gate_policy_raised",
        subject_type="elicitation",
        subject_id=elicitation.id,
        call_id=elicitation.call_id,
        payload={
            "arguments_asked": asked,
            "arguments_approved": approved,
            "from": sources,
            "before": before,
            "after": changed,
        },
    )
    return sources


async def pass_gate(*, session: AsyncSession, round_: CallRound, actor: Actor) -> bool:
    """Apply the decided gate of `round_` (locked, and just marked ready); True when the call's first
    send was queued. The caller commits."""
    question = (
        await session.execute(select(Elicitation).where(Elicitation.round_id == round_.id))
    ).scalar_one()
    call = await get_row(session, Call, round_.call_id)
    now = utcnow()
    asked = json.loads(call.params_json).get("arguments") or {}
    if question.status == QuestionStatus.ACCEPTED:
        approved = json.loads(question.content_json or "{}").get("arguments", asked)
        call.approved_params_json = approved_params(call.params_json, approved)
        move_call(call, CallStatus.RUNNING, now)
        session.add(
            DispatchJob(call_id=call.id, round_id=round_.id, kind=JobKind.INITIAL, status=JobStatus.READY)
        )
        edited = call.approved_params_json is not None
        record_event(
            session=session,
            actor=actor,
            action="gate_approved",
            subject_type="elicitation",
            subject_id=question.id,
            call_id=call.id,
            payload={"edited": edited, "arguments_asked": asked, "arguments_sent": approved},
        )
        return True
    by_expiry = CallStatus.DECLINED if question.expiry_action == "decline" else CallStatus.CANCELLED
    status = ENDED[QuestionStatus(question.status)] or by_expiry
    error = await _why_it_ended(session, question, status)
    end_at_console_round(session=session, call=call, round_=round_, status=status, error=error, actor=actor)
    return False


async def _why_it_ended(session: AsyncSession, question: Elicitation, status: CallStatus) -> dict[str, Any]:
    """The call's error: what the agent (and its model) is told, and the same as data."""
    if question.status == QuestionStatus.EXPIRED:
        message = f"The approval gate was not answered in time, so the call was {status} and not sent."
        return {"message": message, "at_gate": True, "decided_by": None, "reason": "expired"}
    who = (
        await session.execute(select(User.name).where(User.id == question.decided_by))
    ).scalar_one_or_none() or "someone"
    reason = json.loads(question.content_json or "{}").get("reason") if question.content_json else None
    verb = "declined" if status == CallStatus.DECLINED else "cancelled"
    message = f"{who} {verb} this call at the approval gate, so it was not sent."
    if reason:
        message += f" Reason: {reason}"
    return {"message": message, "at_gate": True, "decided_by": who, "reason": reason}
