"""Answers as the question page posts them: raw form fields checked and turned into one decision."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.models import Elicitation
from console.elicitations.decisions import answer, answer_refusal, refuse
from console.elicitations.service import QuestionView, consented_before, look_at_question
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


def form_fields(elicitation: Elicitation) -> tuple[FieldSpec, ...] | None:
    """The fields of a form question (None for a link, or a schema the form generator cannot show)."""
    if elicitation.mode != "form":
        return None
    try:
        return parse_schema(json.loads(elicitation.schema_json or "null"))
    except (SchemaError, ValueError):
        return None


async def answer_from_page(
    *, session: AsyncSession, viewer: Viewer, elicitation_id: str, posted: Mapping[str, list[str]]
) -> PageAnswer:
    """Decide the question with what its page posted (`action`, `digest`, `content_digest`, the fields).

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
        await refuse(
            session=session, viewer=viewer, elicitation=elicitation, what="answer:web", reason=refusal
        )
    action = _first(posted, "action")
    consent_missing = elicitation.mode == "url" and action == "accept"
    if consent_missing and not await consented_before(session=session, elicitation=elicitation):
        return PageAnswer(view, "consent_first")
    content: dict[str, Any] | None = None
    fields = form_fields(elicitation)
    cosigning = elicitation.content_digest is not None
    if action == "accept" and fields is not None and not cosigning:
        content, errors = form_to_content(fields, dict(posted))
        if errors:
            return PageAnswer(view, "invalid", errors)
    try:
        await answer(
            session=session,
            viewer=viewer,
            elicitation_id=elicitation_id,
            action=action,
            content=content,
            digest=_first(posted, "digest"),
            signed_digest=_first(posted, "content_digest") or None,
        )
    except StepUpRequired:
        if content is not None:
            await keep_form(
                session=session, web_session_id=viewer.web_session_id, subject=elicitation_id, content=content
            )
        return PageAnswer(view, "step_up")
    except InvalidInput as exc:
        return PageAnswer(view, "invalid", exc.fields, exc.message)
    return PageAnswer(view, "decided")


def _first(posted: Mapping[str, list[str]], name: str) -> str:
    return (posted.get(name) or [""])[0]
