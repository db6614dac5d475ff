"""Answers as the question page posts them: raw form fields checked and turned into one decision."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import FORM_MODES, Elicitation
from console.calls.questions.decisions import Decision, answer, answer_refusal, refuse
from console.calls.questions.inbox import QuestionView, consented_before, look_at_question
from console.calls.states import QuestionMode
from console.errors import InvalidInput, StepUpRequired
from console.forms import FieldSpec, SchemaError, form_to_content, parse_schema
from console.identity import Viewer
from console.identity.kept_forms import keep_form

PageOutcome = Literal["decided", "consent_first", "invalid", "step_up"]


@dataclass(frozen=True)
class PageAnswer:
    """What became of a posted answer: decided, or what the person must do first."""

    view: QuestionView  # the question as it was before the answer
    outcome: PageOutcome
    errors: dict[str, str] = field(default_factory=dict)  # for "invalid": field -> message
    message: str | None = None
    decision: Decision | None = None  # for "decided"


def form_fields(elicitation: Elicitation) -> tuple[FieldSpec, ...] | None:
    """The fields of a form question (a sampling question's: the reply), or of a gate whose approvers may
    change the arguments (None for a link, or a schema the form generator cannot show: a gate's arguments
    are then edited as JSON)."""
    if elicitation.mode not in FORM_MODES and not (
        elicitation.mode == QuestionMode.GATE and elicitation.allow_edit
    ):
        return None
    try:
        return parse_schema(json.loads(elicitation.schema_json or "null"))
    except (SchemaError, ValueError):
        return None


def edited_arguments(
    fields: tuple[FieldSpec, ...] | None, asked: Mapping[str, Any], posted: Mapping[str, list[str]]
) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """The arguments an approver of a gate posted (None when the page posted none), with field errors.

    From the generated form: the fields it shows replace the agent's values of those arguments, the
    others stay; a field left at the schema's default for an argument the agent did not send is no
    change. From the JSON text area (a schema the form cannot show): the object typed there.
    """
    if "arguments_json" in posted:
        text = _first(posted, "arguments_json")
        try:
            typed = json.loads(text)
        except ValueError as exc:
            return None, {"arguments_json": f"not valid JSON: {exc}"}
        if not isinstance(typed, dict):
            return None, {"arguments_json": "must be a JSON object"}
        return typed, {}
    if fields is None or not any(f"f{index}" in posted for index in range(len(fields))):
        return None, {}
    content, errors = form_to_content(fields, dict(posted))
    if errors:
        return None, errors
    shown = {spec.name for spec in fields}
    arguments = {name: value for name, value in asked.items() if name not in shown}
    for spec in fields:
        default = list(spec.default) if isinstance(spec.default, tuple) else spec.default
        if spec.name in content and (spec.name in asked or content[spec.name] != default):
            arguments[spec.name] = content[spec.name]
    return arguments, {}


async def answer_from_page(
    *,
    session: AsyncSession,
    viewer: Viewer,
    elicitation_id: str,
    posted: Mapping[str, list[str]],
) -> PageAnswer:
    """Decide the question with what its page posted (`action`, `digest`, `content_digest`, the fields),
    in the caller's transaction (`decisions.answer`).

    Who may not answer is refused before the fields are looked at, so a refused person learns nothing
    about the form. A link is accepted only after consent on its gate; typed content that needs a
    fresh sign-in first is kept for this browser session, to fill the form again on return.

    Raises:
        NotFound, Forbidden (recorded), Conflict or Gone (someone else decided, or it expired).
    """
    view = await look_at_question(
        session=session, viewer=viewer, elicitation_id=elicitation_id, attempt="answer:web"
    )
    elicitation = view.elicitation
    refusal = answer_refusal(viewer, elicitation)
    if refusal is not None:
        refuse(session=session, viewer=viewer, elicitation=elicitation, what="answer:web", reason=refusal)
    action = _first(posted, "action")
    consent_missing = elicitation.mode == QuestionMode.URL and action == "accept"
    if consent_missing and not await consented_before(session=session, elicitation=elicitation):
        return PageAnswer(view, "consent_first")
    content: dict[str, Any] | None = None
    fields = form_fields(elicitation)
    cosigning = elicitation.content_digest is not None
    if action == "accept" and elicitation.mode == QuestionMode.GATE and not cosigning:
        arguments, errors = edited_arguments(fields, view.arguments, posted)
        if errors:
            return PageAnswer(view, "invalid", errors)
        content = None if arguments is None else {"arguments": arguments}
    elif action == "accept" and fields is not None and not cosigning:
        content, errors = form_to_content(fields, dict(posted))
        if errors:
            return PageAnswer(view, "invalid", errors)
    try:
        decision = await answer(
            session=session,
            viewer=viewer,
            elicitation_id=elicitation_id,
            action=action,
            content=content,
            digest=_first(posted, "digest"),
            signed_digest=_first(posted, "content_digest") or None,
            reason=_first(posted, "reason")
            if elicitation.mode == QuestionMode.GATE and action == "decline"
            else None,
        )
    except StepUpRequired:
        if content is not None:
            await keep_form(
                session=session, web_session_id=viewer.web_session_id, subject=elicitation_id, content=content
            )
        return PageAnswer(view, "step_up")
    except InvalidInput as exc:
        errors = _gate_errors(exc.fields, fields) if elicitation.mode == QuestionMode.GATE else exc.fields
        return PageAnswer(view, "invalid", errors, exc.message)
    return PageAnswer(view, "decided", decision=decision)


def _gate_errors(errors: Mapping[str, str], fields: tuple[FieldSpec, ...] | None) -> dict[str, str]:
    """A gate's argument errors by the page's field names (its form), or in one line (its JSON text)."""
    shown = {spec.name for spec in fields or ()}
    by_field: dict[str, str] = {}
    rest: list[str] = []
    for key, message in errors.items():
        name = key.removeprefix("content.arguments").lstrip(".")
        if name in shown:
            by_field[name] = message
        else:
            rest.append(f"{name}: {message}" if name and name != key else message)
    if rest:
        by_field[""] = "; ".join(rest)
    return by_field


def _first(posted: Mapping[str, list[str]], name: str) -> str:
    return (posted.get(name) or [""])[0]
