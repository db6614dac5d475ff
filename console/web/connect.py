"""The consent gate for URL-mode questions: only the call's owner sees and opens the link."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.calls.links.inspection import LinkReport, inspect_link
from console.calls.questions import decisions
from console.calls.questions import inbox as questions
from console.calls.questions.inbox import QuestionView
from console.calls.states import QuestionStatus
from console.dispatch.taking import resume_after_commit
from console.errors import Conflict, InvalidInput, StepUpRequired
from console.identity.sessions import SignedIn
from console.runtime import runtime_of
from console.transactions import commit, rollback
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, RuntimeDep, form_fields
from console.web.htmx import redirect_to_reauthentication
from console.web.templating import render

router = APIRouter(include_in_schema=False)


def link_of(request: Request, view: QuestionView) -> LinkReport:
    settings = runtime_of(request.app).settings
    return inspect_link(view.elicitation.url or "", allow_http_loopback=settings.env == "dev")


async def _owner_view(
    request: Request, session: DbSession, user: SignedIn, elicitation_id: str
) -> QuestionView:
    return await questions.look_at_own_link(
        session=session,
        viewer=user.viewer,
        elicitation_id=elicitation_id,
        attempt=f"open_link:{request.method}",
    )


@router.get("/connect/{elicitation_id}")
async def consent_page(elicitation_id: str, request: Request, session: DbSession, user: WebUser) -> Response:
    view = await _owner_view(request, session, user, elicitation_id)
    return render(
        request, "questions/connect.html", {"user": user, "q": view, "link": link_of(request, view)}
    )


@router.post("/connect/{elicitation_id}")
async def open_link(
    elicitation_id: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
    runtime: RuntimeDep,
) -> Response:
    view = await _owner_view(request, session, user, elicitation_id)
    digest = (await form_fields(request, digest=200)).get("digest", "")
    link = link_of(request, view)
    if not link.openable:
        raise InvalidInput(f"the console will not open this address: {link.refusal}")
    if await questions.reopen_link(session=session, viewer=user.viewer, elicitation=view.elicitation):
        # The server asked again for a link the owner already agreed to open: open it, answer nothing yet.
        await commit(session)  # the record of opening it again
        return _leaving(request, link)
    try:
        decision = await decisions.answer(
            session=session,
            viewer=user.viewer,
            elicitation_id=elicitation_id,
            action="accept",
            digest=digest or None,
        )
    except StepUpRequired:
        await commit(session)  # the refused attempt's record
        return redirect_to_reauthentication(request, f"/connect/{elicitation_id}")
    except Conflict:
        # A second click (or a reload) after consent: the person may still go where they agreed to go.
        await rollback(session)
        fresh = await questions.look_at_question(
            session=session, viewer=user.viewer, elicitation_id=elicitation_id
        )
        if fresh.elicitation.status != QuestionStatus.ACCEPTED:
            raise
        return _leaving(request, link)
    await resume_after_commit(
        session=session, signals=runtime.signals, dispatcher=runtime.dispatcher, decision=decision
    )
    await commit(session)
    return _leaving(request, link)


def _leaving(request: Request, link: LinkReport) -> Response:
    return render(request, "questions/leaving.html", {"url": link.url, "domain": link.site_display})


def gate_redirect(elicitation_id: str) -> Response:
    return RedirectResponse(f"/connect/{elicitation_id}", status_code=303)
