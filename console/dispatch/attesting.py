"""The approval attestation a request carries when people decided what it sends: after a gate's
approval, or on a resume with their answers (console/attestation.py; servers verify it against
/.well-known/jwks.json). A job's first send signs it and every later send of the job carries the same."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import ANSWER, APPROVAL_META, GATE, Attester, Decision, Question
from console.calls.gates.opening import GATE_KEY
from console.calls.models import POLICY_MODES, Call, CallRound, Elicitation
from console.calls.questions.inbox import SignatureView, signatures_of
from console.calls.states import QuestionMode
from console.config import Settings
from console.identity.models import User
from console.mcp.models import McpServer
from console.mcp.registry import audience_of
from console.policies.rules import gate_rule

# Built once: it runs for every resume.
_QUESTIONS_AND_DECIDERS = (
    select(Elicitation, User.name)
    .outerjoin(User, User.id == Elicitation.decided_by)
    .where(Elicitation.round_id == bindparam("round_id"))
    .order_by(Elicitation.decided_at, Elicitation.key)
)
_GATE_AND_DECIDER = (
    select(Elicitation, User.name)
    .join(CallRound, CallRound.id == Elicitation.round_id)
    .outerjoin(User, User.id == Elicitation.decided_by)
    .where(CallRound.call_id == bindparam("call_id"), CallRound.n == 0, Elicitation.mode == QuestionMode.GATE)
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
    server: McpServer,
    requester: str,
    params: dict[str, Any],
    questions: RoundQuestions | None,
    kept: str | None,
) -> dict[str, Any] | None:
    """`{APPROVAL_META: <compact JWS>}` for a send that follows people's decisions on its round's
    `questions` (none when nobody decided one under a policy: no round, every question expired, or only
    the owner's own links); `kept` is the attestation an earlier send of the same job carried, which is
    carried again unchanged."""
    if kept is not None:
        return {APPROVAL_META: kept}
    if attester is None or questions is None:
        return None
    decided = [
        (question, by)
        for question, by in await questions.with_deciders()
        if by is not None and question.mode in POLICY_MODES
    ]
    if not decided:
        return None
    decided_questions = [question for question, _ in decided]
    signed = await signatures_of(session=session, questions=decided_questions)
    attested = [
        Question(question.key, question.required_approvals, _decisions(question, by, signed))
        for question, by in decided
    ]
    gate = decided_questions[0].mode == QuestionMode.GATE
    edited = call.approved_params_json is not None
    token = attester.sign(
        issuer=settings.base_url,
        audience=audience_of(server),
        call_id=call.id,
        server=server.name,
        method=call.method,
        params=params,
        kind=GATE if gate else ANSWER,
        requester=requester,
        questions=attested,
        rule=_rule(decided_questions[0]),
        decided_at=max(q.decided_at for q in decided_questions if q.decided_at is not None),
        minutes=settings.approval_minutes,
        asked=json.loads(call.params_json) if edited else None,
        edited_by=(await _editor(session, call, attested[0] if gate else None)) if edited else None,
    )
    return {APPROVAL_META: token}


def _decisions(
    question: Elicitation, decider: str, signed: dict[str, tuple[SignatureView, ...]]
) -> tuple[Decision, ...]:
    """Who decided the question: every signer of an N-of-M question (the first accept, then co-signs),
    else its one decider."""
    signatures = signed.get(question.id, ())
    if not signatures and question.decided_at is not None:
        action = ACTIONS.get(question.status, question.status)
        return (Decision(by=decider, action=action, at=question.decided_at),)
    decisions: list[Decision] = []
    for signature in signatures:
        accepted_before = any(d.action in ("accept", "cosign") for d in decisions)
        action = "cosign" if signature.action == "accept" and accepted_before else signature.action
        decisions.append(Decision(by=signature.user, action=action, at=signature.at))
    return tuple(decisions)


async def _editor(session: AsyncSession, call: Call, gate: Question | None) -> str | None:
    """Who changed the call's arguments at its gate: the approver whose accept carried them (the first
    accept of an N-of-M gate)."""
    if gate is None:
        found = (await session.execute(_GATE_AND_DECIDER, {"call_id": call.id})).one_or_none()
        if found is None or found[1] is None:
            return None
        question, by = found
        signed = await signatures_of(session=session, questions=[question])
        gate = Question(GATE_KEY, question.required_approvals, _decisions(question, by, signed))
    return next((d.by for d in gate.decisions if d.action == "accept"), None)


def _rule(question: Elicitation) -> str | None:
    """The policy rule that asked: a gate's, else the most specific rule the question was asked under."""
    applied = json.loads(question.policy_json or "{}").get("applied", [])
    gate = gate_rule(applied)
    if gate is not None:
        return gate.get("rule")
    return applied[-1].get("rule") if applied else None
