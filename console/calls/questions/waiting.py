"""Whom a waiting call waits for, in words an agent can pass on to the person it works for."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Elicitation, Signature
from console.calls.states import QuestionMode, QuestionStatus, SignatureAction
from console.identity.models import Team, User


@dataclass(frozen=True)
class Waiting:
    question: Elicitation
    who: str  # e.g. "2 approvers of platform, not dev"
    approvals: int  # accepts so far

    @property
    def id(self) -> str:
        return self.question.id

    @property
    def mode(self) -> str:
        return self.question.mode  # see calls.models.POLICY_MODES

    @property
    def message(self) -> str:
        return self.question.message  # the server's text, as it sent it

    @property
    def required_approvals(self) -> int:
        return self.question.required_approvals

    def path(self) -> str:
        """Where the question is answered: a link opens through its owner's consent page."""
        return f"/connect/{self.id}" if self.mode == QuestionMode.URL else f"/elicitations/{self.id}"


async def waiting_on(*, session: AsyncSession, call_id: str) -> list[Waiting]:
    """The call's pending questions, each with who may answer it under its policy."""
    approvals = (
        select(func.count())
        .select_from(Signature)
        .where(Signature.elicitation_id == Elicitation.id, Signature.action == SignatureAction.ACCEPT)
        .scalar_subquery()
    )
    rows = (
        await session.execute(
            select(Elicitation, User.name, Team.name, approvals)
            .join(User, User.id == Elicitation.owner_id)
            .join(Team, Team.id == Elicitation.team_id)
            .where(Elicitation.call_id == call_id, Elicitation.status == QuestionStatus.PENDING)
            .order_by(Elicitation.created_at, Elicitation.key)
        )
    ).all()
    return [Waiting(q, who(q, owner, team), int(count or 0)) for q, owner, team, count in rows]


def who(question: Elicitation, owner: str, team: str) -> str:
    """Who may answer the question, in a few words."""
    if question.mode == QuestionMode.URL:
        return f"{owner} (the link is theirs alone)"
    if question.mode == QuestionMode.CONNECT:
        return f"{owner} (connecting their own account)"
    if question.answerers == "owner":
        return owner
    count = question.required_approvals
    approvers = f"{count} approvers of {team}" if count > 1 else f"an approver of {team}"
    if question.answerers == "approvers" or question.no_self_approval:
        return approvers + (f", not {owner}" if question.no_self_approval else "")
    return (
        f"{count} different people of {team} ({owner} or approvers)"
        if count > 1
        else f"{owner} or {approvers}"
    )
