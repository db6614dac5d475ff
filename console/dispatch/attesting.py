"""The approval attestation a request carries when people decided what it sends: after a gate's
approval, or on a resume with their answers (console/attestation.py; servers verify it against
/.well-known/jwks.json)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import APPROVAL_META, Approval, Attester
from console.calls.models import Call, DispatchJob, Elicitation, Signature
from console.config import Settings
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
    (none when nobody decided it: no round, or every question expired or was re-applied)."""
    if attester is None or job.round_id is None:
        return None
    questions = (
        (
            await session.execute(
                select(Elicitation)
                .where(Elicitation.round_id == job.round_id, Elicitation.decided_by.is_not(None))
                .order_by(Elicitation.decided_at, Elicitation.key)
            )
        )
        .scalars()
        .all()
    )
    if not questions:
        return None
    approvals = await _approvals(session, list(questions))
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


async def _approvals(session: AsyncSession, questions: list[Elicitation]) -> list[Approval]:
    """Who decided, each question in turn: every signer of an N-of-M question, else its one decider."""
    ids = [q.id for q in questions]
    signed = (
        await session.execute(
            select(Signature.elicitation_id, Signature.action, Signature.signed_at, User.name)
            .join(User, User.id == Signature.user_id)
            .where(Signature.elicitation_id.in_(ids))
            .order_by(Signature.signed_at)
        )
    ).all()
    deciders = dict(
        (
            await session.execute(
                select(User.id, User.name).where(User.id.in_([q.decided_by for q in questions]))
            )
        ).all()
    )
    approvals: list[Approval] = []
    for question in questions:
        signatures = [row for row in signed if row.elicitation_id == question.id]
        if signatures:
            first = True
            for row in signatures:
                action = "cosign" if row.action == "accept" and not first else row.action
                approvals.append(Approval(by=row.name, action=action, at=row.signed_at))
                first = first and row.action != "accept"
        elif question.decided_at is not None:
            by = deciders.get(question.decided_by or "", "someone")
            approvals.append(
                Approval(by=by, action=ACTIONS.get(question.status, question.status), at=question.decided_at)
            )
    return approvals


def _rule(question: Elicitation) -> str | None:
    """The policy rule that asked: a gate's, else the most specific rule the question was asked under."""
    applied = json.loads(question.policy_json or "{}").get("applied", [])
    gate = gate_rule(applied)
    if gate is not None:
        return gate.get("rule")
    return applied[-1].get("rule") if applied else None
