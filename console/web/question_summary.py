"""The top of the question page: the decision in one sentence, why it waits for the viewer, the policy in
one line; and the arguments as a table, with an approver's change shown as before/after."""

from __future__ import annotations

from typing import Any

from console.calls.argument_table import ArgumentRow, argument_rows
from console.calls.questions.inbox import QuestionView
from console.calls.states import QuestionMode
from console.calls.summary import CallSummary, summarise_call
from console.identity.sessions import SignedIn
from console.policies.rules import expiry_outcome

# What each button does to the call, in one line under the buttons (MCP's accept, decline and cancel).
GATE_BUTTONS = (
    "Reject ends the call unsent and tells the agent it was refused (with your reason). "
    "Cancel the call ends it unsent without a verdict: the agent learns that nobody decided, "
    "and may ask again."
)
FORM_BUTTONS = (
    "Decline tells the server no. Cancel dismisses the question without an answer; "
    "the server decides what happens next."
)


def call_summary(view: QuestionView) -> CallSummary | None:
    """A gate's call in the console's words (None for other questions: the server's message says them)."""
    if view.elicitation.mode != QuestionMode.GATE:
        return None
    tool = view.asked.get("tool") or view.target
    return summarise_call(str(tool), view.arguments)


def why_you(view: QuestionView, user: SignedIn) -> str:
    """Why the question waits for the viewer, with the approvals given so far."""
    e = view.elicitation
    if e.mode == QuestionMode.CONNECT:
        return f"It waits for you to connect your account at {view.server}: your agent's call runs as you."
    role = user.viewer.roles.get(e.team_id)
    if e.owner_id == user.viewer.user_id:
        words = "It waits for you: your agent made this call"
    elif role in ("approver", "admin"):
        words = f"It waits for you: you are one of the team's {role}s"
    else:
        words = "It waits for an answer"
    if e.required_approvals > 1:
        words += f"; {view.approvals} of {e.required_approvals} approvals given"
    return words + "."


def expiry_words(view: QuestionView) -> str:
    """What happens when nobody answers in time: "then it is declined"."""
    if view.elicitation.mode == QuestionMode.SAMPLING:
        return "then the call is abandoned"
    return "then " + expiry_outcome(view.elicitation.expiry_action)


def gate_rows(view: QuestionView, decided: Any) -> list[ArgumentRow]:
    """The agent's arguments; when approvers fixed others (`decided`, an accepted gate's content), the
    difference, the same for every viewer."""
    approved = decided.get("arguments") if isinstance(decided, dict) else None
    edited = approved is not None and approved != view.arguments
    return argument_rows(view.arguments, approved, edited=edited)


def answer_rows(answer: Any) -> list[ArgumentRow]:
    """A form answer (as fixed by its first approver, or as accepted) as rows of the same table."""
    return argument_rows(answer if isinstance(answer, dict) else {})
