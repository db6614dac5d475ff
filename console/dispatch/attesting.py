"""The approval attestation a request carries when people decided what it sends: after a gate's
approval, or on a resume with their answers (console/attestation.py; servers verify it against
/.well-known/jwks.json)."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import APPROVAL_META, Approval, Attester
from console.calls.models import Call, Elicitation
from console.config import Settings
from console.elicitations.service import SignatureView, signatures_of
from console.identity.models import User
from console.policies.rules import gate_rule

# Built once: it runs for every resume.
_QUESTIONS_AND_DECIDERS = (
    select(Elicitation, User.name)
    .outerjoin(User, User.id == Elicitation.decided_by)
    .where(Elicitation.round_id == bindparam("round_id"))
    .order_by(Elicitation.decided_at, Elicitation.key)
)


class RoundQuestions:
    """The questions of a round with who decided each (None: nobody, it expired), read once for both the
    answers a resume sends and the attestation of who decided them."""

    def __init__(self, session: AsyncSession, round_id: str) -> None:
        self._session, self.round_id = session, round_id
        self._rows: list[tuple[Elicitation, str | None]] | None = None

    async def with_deciders(self) -> list[tuple[Elicitation, str | None]]:
        """In the order they were decided (by key when at the same time)."""
        if self._rows is None:
            found = await self._session.execute(_QUESTIONS_AND_DECIDERS, {"round_id": self.round_id})
            self._rows = [(question, by) for question, by in found]
        return self._rows


ACTIONS = {"accepted": "accept", "declined": "decline", "cancelled": "cancel"}


async def attestation_meta(
    *,
    session: AsyncSession,
    attester: Attester | None,
    settings: Settings,
    call: Call,
    server: str,
    params: dict[str, Any],
    questions: RoundQuestions | None,
) -> dict[str, Any] | None:
    """`{APPROVAL_META: <compact JWS>}` for a send that follows people's decisions on its round's
    `questions` (none when nobody decided it: no round, or every question of it expired)."""
    if attester is None or questions is None:
        return None
    decided = [(question, by) for question, by in await questions.with_deciders() if by is not None]
    if not decided:
        return None
    decided_questions = [question for question, _ in decided]
    signed = await signatures_of(session=session, questions=decided_questions)
    approvals = [approval for question, by in decided for approval in _approvals(question, by, signed)]
    token = attester.sign(
        issuer=settings.base_url,
        call_id=call.id,
        server=server,
        method=call.method,
        params=params,
        approvals=approvals,
        rule=_rule(decided_questions[0]),
        decided_at=max(q.decided_at for q in decided_questions if q.decided_at is not None),
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
