"""The approval attestation a request carries when people decided what it sends: after a gate's
approval, or on a resume with their answers (console/attestation.py; servers verify it against
/.well-known/jwks.json)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import APPROVAL_META, Approval, Attester
from console.calls.models import Call, DispatchJob, Elicitation
from console.config import Settings
from console.elicitations.service import SignatureView, signatures_of
from console.identity.models import User
from console.policies.rules import gate_rule

ACTIONS = {"accepted": "accept", "declined": "decline", "cancelled": "cancel"}


async def attestation_meta(
    *,
    session: AsyncSession,
    attester: Attester | None,
    settings: Settings,
    job: DispatchJob,
    call: Call,
    server: str,
    params: dict[str, Any],
) -> dict[str, Any] | None:
    """`{APPROVAL_META: <compact JWS>}` for a send that follows people's decisions on the job's round
    (none when nobody decided it: no round, or every question of it expired)."""
    if attester is None or job.round_id is None:
        return None
    decided = (
        await session.execute(
            select(Elicitation, User.name)
            .join(User, User.id == Elicitation.decided_by)
            .where(Elicitation.round_id == job.round_id)
            .order_by(Elicitation.decided_at, Elicitation.key)
        )
    ).all()
    if not decided:
        return None
    questions = [question for question, _ in decided]
    signed = await signatures_of(session=session, questions=questions)
    approvals = [approval for question, by in decided for approval in _approvals(question, by, signed)]
    token = attester.sign(
        issuer=settings.base_url,
        call_id=call.id,
        server=server,
        method=call.method,
        params=params,
        approvals=approvals,
        rule=_rule(questions[0]),
        decided_at=max(q.decided_at for q in questions if q.decided_at is not None),
        minutes=settings.approval_minutes,
    )
    return {APPROVAL_META: token}


def _approvals(
    question: Elicitation, decider: str, signed: dict[str, tuple[SignatureView, ...]]
) -> list[Approval]:
    """Who decided the question: every signer of an N-of-M question (the first accept, then co-signs),
    else its one decider."""
    signatures = signed.get(question.id, ())
    if not signatures and question.decided_at is not None:
        action = ACTIONS.get(question.status, question.status)
        return [Approval(by=decider, action=action, at=question.decided_at)]
    approvals: list[Approval] = []
    for signature in signatures:
        accepted_before = any(a.action in ("accept", "cosign") for a in approvals)
        action = "cosign" if signature.action == "accept" and accepted_before else signature.action
        approvals.append(Approval(by=signature.user, action=action, at=signature.at))
    return approvals


def _rule(question: Elicitation) -> str | None:
    """The policy rule that asked: a gate's, else the most specific rule the question was asked under."""
    applied = json.loads(question.policy_json or "{}").get("applied", [])
    gate = gate_rule(applied)
    if gate is not None:
        return gate.get("rule")
    return applied[-1].get("rule") if applied else None
