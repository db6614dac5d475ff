"""The question page: what is asked and by whom, the generated form, and the decision."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.calls import service as calls
from console.calls.argument_table import argument_rows
from console.calls.connects.deciding import owner_connected, server_of
from console.calls.models import FORM_MODES, POLICY_MODES
from console.calls.questions import decisions, page_answers
from console.calls.questions import inbox as questions
from console.calls.questions.inbox import QuestionView
from console.calls.questions.sampling import shown_request
from console.calls.states import TERMINAL, CallStatus, QuestionMode, QuestionStatus
from console.db import utcnow
from console.dispatch.taking import resume_after_commit
from console.errors import Conflict, Gone, InvalidInput
from console.forms import SchemaError, build_widgets, parse_schema
from console.forms.fields import FieldSpec
from console.identity.kept_forms import take_kept_form
from console.identity.sessions import SignedIn, signed_in_at
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.enterprise import enterprise_client
from console.policies.rules import (
    OWNER_ONLY_MODES,
    Layer,
    Policy,
    combine,
    describe,
    gate_rule,
    policy_summary,
    step_up_refusal,
)
from console.runtime import runtime_of
from console.transactions import commit, rollback
from console.web.annotations import annotation_badges
from console.web.auth import CsrfUser, WebUser
from console.web.connect import gate_redirect, link_of
from console.web.deps import DbSession, RuntimeDep
from console.web.htmx import is_htmx, redirect_to_reauthentication
from console.web.question_summary import (
    FORM_BUTTONS,
    GATE_BUTTONS,
    answer_rows,
    call_summary,
    expiry_words,
    gate_rows,
    why_you,
)
from console.web.templating import render

router = APIRouter(include_in_schema=False)
TEMPLATE = "questions/detail.html"
STATE = "question_state"  # the block every htmx swap of the page renders
WATCH_SECONDS = 5  # how often a page with nothing to answer checks for other people's answers


@router.get("/elicitations/{elicitation_id}")
async def question_page(elicitation_id: str, request: Request, session: DbSession, user: WebUser) -> Response:
    view = await questions.look_at_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id
    )
    if _waits_for_owner(user, view):
        # Teammates learn that it waits for the owner; the link itself is the owner's alone.
        return render(request, "questions/waits_for_owner.html", {"user": user, "q": view})
    if view.elicitation.mode == QuestionMode.URL and view.elicitation.status == QuestionStatus.ACCEPTED:
        again = await questions.asked_again(session=session, elicitation=view.elicitation)
        if again is not None:  # the server re-asks for the same link: go where "Check again" lives
            return RedirectResponse(f"/elicitations/{again}", status_code=303)
    kept = None
    if view.elicitation.status == QuestionStatus.PENDING and view.elicitation.mode in POLICY_MODES:
        kept = await take_kept_form(
            session=session, web_session_id=user.viewer.web_session_id, subject=elicitation_id
        )
        await commit(session)
    context = await _context(request, session, user, view, kept=kept)
    return render(request, TEMPLATE, context)


@router.get("/elicitations/{elicitation_id}/state")
async def question_state(
    elicitation_id: str, request: Request, session: DbSession, user: WebUser
) -> Response:
    """The part of the question page that changes (time, approvals, decision or outcome), as it is now."""
    view = await questions.read_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id, attempt="view_state"
    )
    context = await _context(request, session, user, view)
    return render(request, TEMPLATE, context, block=STATE)


@router.get("/elicitations/{elicitation_id}/outcome")
async def outcome(elicitation_id: str, request: Request, session: DbSession, user: WebUser) -> Response:
    """How a decided question ended (the same block as its state); a pending one has no outcome yet."""
    view = await questions.read_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id, attempt="view_outcome"
    )
    if view.elicitation.status == QuestionStatus.PENDING:
        raise InvalidInput(
            "this question is still pending: it has no outcome yet",
            {"elicitation_id": "is still pending"},
        )
    context = await _context(request, session, user, view)
    return render(request, TEMPLATE, context, block=STATE)


def _waits_for_owner(user: SignedIn, view: QuestionView) -> bool:
    """A link question seen by anyone but its owner (or by an owner the policy keeps from answering)."""
    e = view.elicitation
    if e.mode not in OWNER_ONLY_MODES:
        return False
    if e.owner_id != user.viewer.user_id:
        return True
    return e.status == QuestionStatus.PENDING and decisions.answer_refusal(user.viewer, e) is not None


@router.post("/elicitations/{elicitation_id}")
async def decide(
    elicitation_id: str, request: Request, session: DbSession, user: CsrfUser, runtime: RuntimeDep
) -> Response:
    # Anyone who may see the question gets this far; who may not answer is refused (403, audited) there and
    # again inside the decision's transaction.
    form = await request.form()
    posted = {key: [str(v) for v in form.getlist(key)] for key in form}
    try:
        done = await page_answers.answer_from_page(
            session=session, viewer=user.viewer, elicitation_id=elicitation_id, posted=posted
        )
    except (Conflict, Gone) as exc:
        await rollback(session)
        return await _decided_elsewhere(request, session, user, elicitation_id, exc)
    view = done.view
    if done.outcome == "consent_first":
        return gate_redirect(elicitation_id)  # consent happens on the gate, with the full URL shown
    if done.outcome == "step_up":
        await commit(session)  # the refused attempt's record, and the form kept for after the sign-in
        return redirect_to_reauthentication(request, f"/elicitations/{elicitation_id}")
    if done.outcome == "invalid":  # refused before anything was written: nothing to undo
        fields = page_answers.form_fields(view.elicitation)
        return await _form_again(
            request, session, user, view, fields, posted, done.errors, message=done.message
        )
    assert done.decision is not None  # noqa: S101  # "decided" carries its decision
    await resume_after_commit(
        session=session, signals=runtime.signals, dispatcher=runtime.dispatcher, decision=done.decision
    )
    await commit(session)
    if not is_htmx(request):
        return RedirectResponse(f"/elicitations/{elicitation_id}", status_code=303)
    fresh = await questions.look_at_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id
    )
    context = await _context(request, session, user, fresh)
    return render(request, TEMPLATE, context, block=STATE)


async def _form_again(
    request: Request,
    session: DbSession,
    user: SignedIn,
    view: QuestionView,
    fields: tuple[FieldSpec, ...] | None,
    posted: dict[str, list[str]],
    errors: dict[str, str],
    *,
    message: str | None = None,
) -> Response:
    context = await _context(request, session, user, view)
    if fields is not None:
        context["widgets"] = build_widgets(fields, errors=errors, submitted=posted)
    if "arguments_json" in posted:
        context["arguments_text"] = posted["arguments_json"][0]
    whole = errors.get("") or (message if not fields or set(errors) - {f.name for f in fields} else None)
    context["form_error"] = whole or "Some answers need fixing; see the messages next to the fields."
    return render(request, TEMPLATE, context, status=422, block=STATE if is_htmx(request) else None)


async def _decided_elsewhere(
    request: Request, session: DbSession, user: SignedIn, elicitation_id: str, exc: Conflict | Gone
) -> Response:
    status = 409 if isinstance(exc, Conflict) else 410
    fresh = await questions.look_at_question(
        session=session, viewer=user.viewer, elicitation_id=elicitation_id
    )
    context = await _context(request, session, user, fresh)
    context["conflict"] = _conflict_text(exc)
    return render(request, TEMPLATE, context, status=status, block=STATE if is_htmx(request) else None)


def _conflict_text(exc: Conflict | Gone) -> str:
    if exc.message.startswith("already answered: "):
        status, _, who = exc.message.removeprefix("already answered: ").partition(" by ")
        return f"Someone was quicker: {who} already answered ({status})."
    return exc.message[:1].upper() + exc.message[1:] + "."


async def _context(
    request: Request,
    session: DbSession,
    user: SignedIn,
    view: QuestionView,
    *,
    kept: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, read from the question as it is now; `kept` pre-fills the form."""
    context: dict[str, Any] = {
        "user": user,
        "q": view,
        "widgets": None,
        "unsupported": None,
        "conflict": None,
        "form_error": None,
        "kept_answer": False,
        "refresh_seconds": None,
        "sampling": shown_request(view.asked) if view.elicitation.mode == QuestionMode.SAMPLING else None,
        "summary": call_summary(view),
        "why_you": why_you(view, user),
        "expiry_words": expiry_words(view),
        "gate_buttons_help": GATE_BUTTONS,
        "form_buttons_help": FORM_BUTTONS,
        "terminal_statuses": TERMINAL,
        **await _policy_context(session, user, view),
    }
    decided = context["fixed_content"] or (
        view.answer if view.elicitation.status == QuestionStatus.ACCEPTED else None
    )
    if view.elicitation.mode == QuestionMode.GATE:
        context["argument_rows"] = gate_rows(view, decided)
        context["annotation_badges"] = annotation_badges(view.asked.get("annotations"))
    else:
        context["argument_rows"] = argument_rows(view.arguments)
        context["answer_rows"] = answer_rows(decided)
    if view.elicitation.status == QuestionStatus.PENDING:
        if view.elicitation.mode == QuestionMode.URL:
            context["link"] = link_of(request, view)
            context["consented"] = await questions.consented_before(
                session=session, elicitation=view.elicitation
            )
        if view.elicitation.mode == QuestionMode.GATE:
            context.update(_gate_form(view, kept))
        if view.elicitation.mode == QuestionMode.CONNECT:
            context["connected"] = await owner_connected(session, view.elicitation)
            context["sso_provider"] = await _single_sign_on_for(request, session, view)
        if view.elicitation.mode in FORM_MODES:
            try:
                fields = parse_schema(json.loads(view.elicitation.schema_json or "null"))
                context["widgets"] = build_widgets(fields, kept)
                context["kept_answer"] = kept is not None and not context["cosigning"]
            except (SchemaError, ValueError) as exc:
                context["unsupported"] = str(exc)
            if context["refusal"] or context["signed_already"]:
                context["refresh_seconds"] = WATCH_SECONDS  # nothing to type here: follow the others
        return context
    call = await calls.view_call(session=session, viewer=user.viewer, call_id=view.elicitation.call_id)
    result = json.loads(call.call.result_json) if call.call.result_json else None
    error = json.loads(call.call.error_json) if call.call.error_json else None
    context.update(
        call=call.call,
        call_busy=call.call.status in (CallStatus.RUNNING, CallStatus.RESUMING),
        result_texts=_texts(result),
        call_error=(error or {}).get("message"),
        withdrawn_by_agent=bool((error or {}).get("withdrawn_by_agent")),
        answer_content=json.loads(view.elicitation.content_json) if view.elicitation.content_json else None,
        next_questions=[
            p for p in call.pending if p.mode not in OWNER_ONLY_MODES or call.owner_id == user.viewer.user_id
        ],
        refresh_seconds=1 if call.call.status in (CallStatus.RUNNING, CallStatus.RESUMING) else None,
    )
    return context


def _gate_form(view: QuestionView, kept: dict[str, Any] | None) -> dict[str, Any]:
    """A gate's arguments for approvers who may change them: the generated form when the tool's
    inputSchema fits it, else the JSON text; filled with the agent's arguments (or what was kept)."""
    arguments = (kept or {}).get("arguments", view.arguments)
    context: dict[str, Any] = {"kept_answer": kept is not None, "arguments_text": None}
    editable = view.elicitation.allow_edit and isinstance(view.asked.get("inputSchema"), dict)
    if not editable or view.elicitation.content_digest is not None:
        return context
    fields = page_answers.form_fields(view.elicitation)
    if fields is not None:
        context["widgets"] = build_widgets(fields, arguments if isinstance(arguments, dict) else {})
    else:
        context["arguments_text"] = json.dumps(arguments, indent=2, ensure_ascii=False)
    return context


async def _policy_context(session: DbSession, user: SignedIn, view: QuestionView) -> dict[str, Any]:
    """Why the viewer may (or may not) answer, the policy in words, and the approvals so far."""
    e = view.elicitation
    # The escalation is not kept on the question: the rules that applied say it.
    layers = [Layer(a["from"], a.get("set", {})) for a in view.policy.get("applied", [])]
    asked_under, _ = combine(layers)
    policy = Policy(
        answerers=e.answerers,
        no_self_approval=e.no_self_approval,
        required_approvals=e.required_approvals,
        expiry_action=e.expiry_action,
        step_up_minutes=e.step_up_minutes,
        escalate_after_minutes=asked_under.escalate_after_minutes,
        escalate_to=asked_under.escalate_to,
    )
    refusal = decisions.answer_refusal(user.viewer, e)
    step_up = None
    if refusal is None and e.status == QuestionStatus.PENDING and e.step_up_minutes is not None:
        authenticated = await signed_in_at(session=session, web_session_id=user.viewer.web_session_id)
        await commit(session)
        step_up = step_up_refusal(e.step_up_minutes, authenticated, utcnow())
    seconds = (e.expires_at - e.created_at).total_seconds()  # microseconds apart: round for people
    asked_for_minutes = round(seconds / 60) if seconds >= 60 else seconds / 60
    return {
        "refusal": refusal,
        "step_up": step_up,
        "policy_line": None if e.mode in OWNER_ONLY_MODES else policy_summary(policy),
        "policy_lines": []
        if e.mode in OWNER_ONLY_MODES
        else describe(policy, asked_for_minutes, expiry_abandons=e.mode == QuestionMode.SAMPLING),
        "policy_sources": [a["from"] for a in view.policy.get("applied", [])],
        "gate_from": (gate_rule(view.policy.get("applied", [])) or {}).get("from"),
        "raised_by_edit": view.policy.get("raised_by_edit"),
        "signed_already": view.signed_by(user.viewer.user_name),
        "cosigning": e.content_digest is not None and e.status == QuestionStatus.PENDING,
        "fixed_content": json.loads(e.content_json) if e.content_json else None,
    }


def _texts(result: Any) -> list[str]:
    """The text parts of a tool, prompt or resource result; other content is summarised by type."""
    if not isinstance(result, dict):
        return []
    texts: list[str] = []
    for part in result.get("content", []):
        texts.append(part.get("text", "") if part.get("type") == "text" else f"[{part.get('type')} content]")
    for message in result.get("messages", []):
        content = message.get("content", {})
        if content.get("type") == "text":
            texts.append(f"{message.get('role')}: {content.get('text')}")
    for item in result.get("contents", []):
        texts.append(item["text"] if "text" in item else f"[binary content {item.get('uri')}]")
    return texts


async def _single_sign_on_for(request: Request, session: DbSession, view: QuestionView) -> str | None:
    """The identity provider a connect question's server takes its grants from, or None when the person
    signs in at the server's own authorization server."""
    server = await session.get(McpServer, await server_of(session, view.elicitation))
    settings = runtime_of(request.app).settings
    if server is None or enterprise_client(Outbound.of(settings), server) is None:
        return None
    name: str = settings.oidc_provider_name
    return name
