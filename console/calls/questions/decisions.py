"""Deciding questions under their policy: who may answer, co-signatures, one decision, expiry.

Every check runs inside the decision's transaction, after the round row is locked: the person's
role and sign-in time are read there, not taken from the page that was shown.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from sqlalchemy import ColumnElement, bindparam, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event, record_refusal
from console.calls.connects.deciding import check_connected, pass_connect
from console.calls.connects.parking import CONNECT_METHOD
from console.calls.gates.deciding import (
    GATE_ROUND,
    approved_arguments,
    decline_reason,
    hold_edit_to_its_rules,
    owner_token_refusal,
    pass_gate,
)
from console.calls.links.required import parked_for_links, pass_links
from console.calls.models import (
    POLICY_MODES,
    AgentRequest,
    Call,
    CallRound,
    DispatchJob,
    Elicitation,
    Signature,
)
from console.calls.moves import may_become, question_may_become, round_may_become
from console.calls.notices import question_answered
from console.calls.questions.sampling import end_if_sampling_refused, sampling_result
from console.calls.rounds.asking import canonical_json
from console.calls.states import (
    AgentRequestStatus,
    CallStatus,
    JobKind,
    JobStatus,
    QuestionMode,
    QuestionStatus,
    RoundStatus,
    SignatureAction,
)
from console.db import finds_any, new_id, utcnow
from console.errors import (
    Conflict,
    ConsoleError,
    Forbidden,
    Gone,
    InvalidInput,
    NotFound,
    StepUpRequired,
)
from console.forms import SchemaError, parse_schema, validate_content
from console.identity import Viewer
from console.identity.idempotency import Keyed
from console.identity.models import Membership, User
from console.identity.sessions import authenticated_at
from console.identity.viewer import OUTSIDER
from console.policies.rules import refusal, step_up_refusal

ACTIONS = tuple(SignatureAction)  # what a person may answer a question with
DECIDED_STATUS = {
    SignatureAction.ACCEPT: QuestionStatus.ACCEPTED,
    SignatureAction.DECLINE: QuestionStatus.DECLINED,
    SignatureAction.CANCEL: QuestionStatus.CANCELLED,
}


@dataclass(frozen=True)
class Decision:
    elicitation: Elicitation  # as the decision left it (its updates are applied to the session's copy)
    call_id: str
    resume_queued: bool  # the round is complete: a resume, a first send or a parked request is ready
    approvals: int  # accepts so far; equals `required_approvals` once accepted
    required_approvals: int
    # The resume job it queued, in the answer's transaction: this process's dispatcher may take it there,
    # to send it once the answer committed (console/dispatch/taking.py); else whichever dispatcher claims it.
    resume: DispatchJob | None = None


def may_answer(viewer: Viewer, elicitation: Elicitation) -> bool:
    """Whether the viewer's roles and the question's policy let them answer (step-up aside)."""
    return answer_refusal(viewer, elicitation) is None


def answer_refusal(viewer: Viewer, elicitation: Elicitation) -> str | None:
    return refusal(
        role=viewer.role_in(elicitation.team_id),
        is_owner=viewer.user_id == elicitation.owner_id,
        mode=elicitation.mode,
        answerers=elicitation.answerers,
        no_self_approval=elicitation.no_self_approval,
    )


def content_digest(content_json: str) -> str:
    """SHA-256 of the canonical JSON of an answer: what co-signers sign."""
    return hashlib.sha256(canonical_json(json.loads(content_json)).encode()).hexdigest()


async def answer(
    *,
    session: AsyncSession,
    viewer: Viewer,
    elicitation_id: str,
    action: str,
    content: Any = None,
    digest: str | None = None,
    signed_digest: str | None = None,
    reason: str | None = None,
    idempotency: Keyed | None = None,
) -> Decision:
    """Record one person's decision in the caller's transaction; when it completes its round, queue
    exactly one resume (`Decision.resume`). With `idempotency`, the request's key is kept with the
    decision.

    With N-of-M approval the first accept fixes the content, each further accept co-signs that
    content (`signed_digest`, or the same content again), and any decline ends the question. A gate
    question's accept approves the call's arguments (`{"arguments": …}` changes them, where its policy
    allows), and its decline may give a `reason` the agent is told.

    Raises:
        NotFound, Forbidden (policy or same-user rule, with the reason), StepUpRequired,
        Gone (expired), Conflict (decided, changed since shown, signed twice, other content),
        InvalidInput (with field errors). A refusal keeps its record (`refuse`).
    """
    found = await _locked_question(session, elicitation_id)
    if found is None:
        raise NotFound(f"no question {elicitation_id!r}")
    round_, elicitation = found
    if viewer.role_in(elicitation.team_id) is None:
        refuse(
            session=session,
            viewer=viewer,
            elicitation=elicitation,
            what=f"answer:{action}",
            reason=OUTSIDER,
            error=NotFound(f"no question {elicitation_id!r}"),
        )
    if action not in ACTIONS:
        raise InvalidInput("invalid answer", {"action": f"must be one of {', '.join(ACTIONS)}"})
    await _authorise(session, viewer, elicitation, action)
    await _ensure_open(session, elicitation, digest)
    if idempotency is not None:
        idempotency.remember(session, "question", elicitation.id)
    said = decline_reason(elicitation, action, reason)
    approved = None  # a gate's first accept: the arguments it approves, under their own rules
    if elicitation.mode == QuestionMode.GATE and action == "accept" and elicitation.content_digest is None:
        approved = await approved_arguments(session, elicitation, content)
        stricter = await hold_edit_to_its_rules(
            session=session, actor=viewer.actor, elicitation=elicitation, approved_json=approved
        )
        if stricter is not None:
            await _authorise(
                session, viewer, elicitation, action, because=f"the changed arguments fall under {stricter}"
            )
    if elicitation.mode in POLICY_MODES and elicitation.required_approvals > 1:
        return await _sign(
            session, viewer, elicitation, round_, action, content, signed_digest, said, approved
        )
    content_json = said or approved or await _checked_content(session, elicitation, action, content)
    queued, resume = await _decide(session, viewer, elicitation, round_, action, content_json)
    return Decision(elicitation, elicitation.call_id, queued, int(action == "accept"), 1, resume)


async def _decide(
    session: AsyncSession,
    viewer: Viewer,
    elicitation: Elicitation,
    round_: CallRound,
    action: str,
    content_json: str | None,
) -> tuple[bool, DispatchJob | None]:
    """The one decision on the question (conditional on it still pending); whether it completed the
    round, and the resume it queued."""
    result = await session.execute(
        update(Elicitation)
        .where(
            Elicitation.id == elicitation.id,
            Elicitation.status == QuestionStatus.PENDING,
            question_may_become(DECIDED_STATUS[SignatureAction(action)]),
        )
        .values(
            status=DECIDED_STATUS[SignatureAction(action)],
            content_json=content_json,
            decided_by=viewer.user_id,
            decided_via=viewer.via,
            decided_at=utcnow(),
        )
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        await _raise_already_decided(session, elicitation.id)
    question_answered(session, elicitation)
    record_event(
        session=session,
        actor=viewer.actor,
        action="question_answered",
        subject_type="elicitation",
        subject_id=elicitation.id,
        call_id=elicitation.call_id,
        payload={
            "action": action,
            "content": json.loads(content_json) if content_json else None,
            "digest": elicitation.digest,
            "key": elicitation.key,
        },
    )
    return await _complete_round(session, round_, viewer.actor)


async def _sign(
    session: AsyncSession,
    viewer: Viewer,
    elicitation: Elicitation,
    round_: CallRound,
    action: str,
    content: Any,
    signed_digest: str | None,
    said: str | None,
    approved: str | None = None,
) -> Decision:
    required = elicitation.required_approvals
    earlier = (
        await session.execute(
            select(Signature.action).where(
                Signature.elicitation_id == elicitation.id, Signature.user_id == viewer.user_id
            )
        )
    ).scalar_one_or_none()
    if earlier is not None:
        raise Conflict(f"you already answered this question ({earlier}); a second person must co-sign")
    if action != "accept":
        session.add(
            Signature(elicitation_id=elicitation.id, user_id=viewer.user_id, action=action, via=viewer.via)
        )
        queued, resume = await _decide(session, viewer, elicitation, round_, action, said)
        approvals = await _count_approvals(session, elicitation.id)
        return Decision(elicitation, elicitation.call_id, queued, approvals, required, resume)
    first = elicitation.content_digest is None
    if first:
        content_json = approved or await _checked_content(session, elicitation, action, content)
        assert content_json is not None  # noqa: S101  # an accepted form or gate always has content
        elicitation.content_json = content_json
        elicitation.content_digest = content_digest(content_json)
    else:
        await _check_cosign(session, elicitation, content, signed_digest)
    session.add(
        Signature(
            elicitation_id=elicitation.id,
            user_id=viewer.user_id,
            action="accept",
            content_digest=elicitation.content_digest,
            via=viewer.via,
        )
    )
    await session.flush()
    approvals = await _count_approvals(session, elicitation.id)
    record_event(
        session=session,
        actor=viewer.actor,
        action="question_signed" if first else "question_cosigned",
        subject_type="elicitation",
        subject_id=elicitation.id,
        call_id=elicitation.call_id,
        payload={
            "content": json.loads(elicitation.content_json or "null") if first else None,
            "content_digest": elicitation.content_digest,
            "digest": elicitation.digest,
            "key": elicitation.key,
            "approvals": approvals,
            "required": required,
        },
    )
    queued, resume = False, None
    if approvals >= required:
        accepted = elicitation.content_json
        queued, resume = await _decide(session, viewer, elicitation, round_, "accept", accepted)
    return Decision(elicitation, elicitation.call_id, queued, approvals, required, resume)


async def _check_cosign(
    session: AsyncSession, elicitation: Elicitation, content: Any, signed_digest: str | None
) -> None:
    offered = signed_digest
    if offered is None and (content is not None or elicitation.mode == QuestionMode.GATE):
        offered = content_digest(await _checked_content(session, elicitation, "accept", content) or "{}")
    if offered is None:
        raise InvalidInput(
            "co-sign the answer the first approver gave",
            {"content_digest": "send the content_digest of the answer you co-sign (or the same content)"},
        )
    if offered != elicitation.content_digest:
        raise Conflict("this is not the answer the first approver gave; co-sign that exact answer or decline")


async def _count_approvals(session: AsyncSession, elicitation_id: str) -> int:
    query = select(func.count()).where(
        Signature.elicitation_id == elicitation_id, Signature.action == SignatureAction.ACCEPT
    )
    return int((await session.execute(query)).scalar_one())


async def _locked_question(
    session: AsyncSession, elicitation_id: str
) -> tuple[CallRound, Elicitation] | None:
    """The question's round, locked first, and the question as it is once the lock is held: decisions on
    one round are serialised, so exactly one of them sees the round complete and queues the resume."""
    round_ = (
        await session.execute(_ROUND_OF_QUESTION, {"elicitation_id": elicitation_id})
    ).scalar_one_or_none()
    if round_ is None:
        return None
    question = await session.execute(_QUESTION_LOCKED, {"elicitation_id": elicitation_id})
    return round_, question.scalar_one()


# Built once: it runs for every decision.
_ROUND_OF_QUESTION = (
    select(CallRound)
    .where(
        CallRound.id
        == select(Elicitation.round_id).where(Elicitation.id == bindparam("elicitation_id")).scalar_subquery()
    )
    .with_for_update()
    .execution_options(populate_existing=True)
)
_QUESTION_LOCKED = (
    select(Elicitation)
    .where(Elicitation.id == bindparam("elicitation_id"))
    .execution_options(populate_existing=True)
)


async def _lock_round(session: AsyncSession, round_id: str) -> CallRound:
    query = select(CallRound).where(CallRound.id == round_id).with_for_update()
    return (await session.execute(query)).scalar_one()


# Built once: it runs for every decision.
_ROLE_IN_TEAM = select(Membership.role).where(
    Membership.user_id == bindparam("user_id"), Membership.team_id == bindparam("team_id")
)


async def _authorise(
    session: AsyncSession,
    viewer: Viewer,
    elicitation: Elicitation,
    action: str,
    *,
    because: str | None = None,
) -> None:
    """Raises Forbidden (or StepUpRequired), keeping an audit event of the refused attempt;
    `because` says why the question's policy is what it is now, when that is news to the person."""
    role = (
        await session.execute(_ROLE_IN_TEAM, {"user_id": viewer.user_id, "team_id": elicitation.team_id})
    ).scalar_one_or_none()
    if role is None:
        raise NotFound(f"no question {elicitation.id!r}")
    is_owner = viewer.user_id == elicitation.owner_id
    reason = refusal(
        role=role,
        is_owner=is_owner,
        mode=elicitation.mode,
        answerers=elicitation.answerers,
        no_self_approval=elicitation.no_self_approval,
    )
    if reason is None and elicitation.mode == QuestionMode.GATE and is_owner and action == "accept":
        reason = owner_token_refusal(viewer)
    if reason is None and action == "accept":
        signed_in = await authenticated_at(session=session, web_session_id=viewer.web_session_id)
        step_up = step_up_refusal(elicitation.step_up_minutes, signed_in, utcnow())
        if step_up is not None:
            said = step_up if because is None else f"{step_up} ({because})"
            refuse(
                session=session,
                viewer=viewer,
                elicitation=elicitation,
                what="answer:step_up",
                reason=said,
                error=StepUpRequired(said) if signed_in is not None else Forbidden(said),
            )
    if reason is not None:
        refuse(
            session=session,
            viewer=viewer,
            elicitation=elicitation,
            what=f"answer:{action}",
            reason=reason if because is None else f"{reason} ({because})",
        )


def refuse(
    *,
    session: AsyncSession,
    viewer: Viewer,
    elicitation: Elicitation,
    what: str,
    reason: str,
    error: ConsoleError | None = None,
) -> NoReturn:
    """Raise `error` (Forbidden with the reason, unless given) for a refused attempt on a question,
    recorded as `access_refused`: only the record outlives the refusal (`record_refusal`)."""
    raise record_refusal(
        session=session,
        error=Forbidden(reason) if error is None else error,
        actor=viewer.actor,
        subject_type="elicitation",
        subject_id=elicitation.id,
        call_id=elicitation.call_id,
        attempt=what,
        reason=reason,
        mode=elicitation.mode,
    )


async def _ensure_open(session: AsyncSession, elicitation: Elicitation, digest: str | None) -> None:
    if elicitation.status == QuestionStatus.EXPIRED:
        raise Gone(f"this question expired and was answered {elicitation.expiry_action}")
    if elicitation.status != QuestionStatus.PENDING:
        await _raise_already_decided(session, elicitation.id)
    if elicitation.expires_at <= utcnow():
        raise Gone("this question expired")
    if digest is not None and digest != elicitation.digest:
        raise Conflict("the question changed since it was shown; reload it")


async def _raise_already_decided(session: AsyncSession, elicitation_id: str) -> None:
    row = (
        await session.execute(
            select(Elicitation.status, Elicitation.expiry_action, User.name)
            .outerjoin(User, User.id == Elicitation.decided_by)
            .where(Elicitation.id == elicitation_id)
        )
    ).one()
    status, expiry_action, who = row
    if status == QuestionStatus.EXPIRED:
        raise Gone(f"this question expired and was answered {expiry_action}")
    raise Conflict(f"already answered: {status} by {who or 'the console'}")


async def _checked_content(
    session: AsyncSession, elicitation: Elicitation, action: str, content: Any
) -> str | None:
    if action != "accept":
        return None
    if elicitation.mode == QuestionMode.GATE:
        return await approved_arguments(session, elicitation, content)
    if elicitation.mode == QuestionMode.URL:
        if content is not None and content != {}:  # servers take an empty object as no content, too
            raise InvalidInput("invalid answer", {"content": "a URL question is accepted without content"})
        return None
    if elicitation.mode == QuestionMode.CONNECT:
        await check_connected(session, elicitation, content)
        return None
    try:
        fields = parse_schema(json.loads(elicitation.schema_json or "{}"))
    except (SchemaError, ValueError):
        raise InvalidInput("this question's form is not supported; decline or cancel it") from None
    clean, errors = validate_content(fields, {} if content is None else content)
    if errors:
        raise InvalidInput("the answer does not match the form", errors)
    return json.dumps(clean, separators=(",", ":"), ensure_ascii=False)


async def queue_resume_if_complete(*, session: AsyncSession, round_: CallRound, actor: Actor) -> bool:
    """If nothing of the round is pending (its questions, and what its agent answers), mark it ready and
    add its one dispatch job."""
    queued, _resume = await _complete_round(session, round_, actor)
    return queued


async def _complete_round(
    session: AsyncSession, round_: CallRound, actor: Actor
) -> tuple[bool, DispatchJob | None]:
    """`queue_resume_if_complete`, and the resume job it queued (a gate's, connect's or links' round
    makes ready a job it does not return, and a held round's answers go on the request held open)."""
    pending = (await session.execute(_PENDING_IN_ROUND, {"round_id": round_.id})).one()
    if any(pending):
        return False, None
    moved = await session.execute(
        update(CallRound)
        .where(CallRound.id == round_.id, round_may_become(RoundStatus.READY))
        .values(status=RoundStatus.READY)
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        return False, None
    if round_.n == GATE_ROUND:
        return await pass_gate(session=session, round_=round_, actor=actor), None
    connect = await _connect_of(session, round_)
    if connect is not None:
        return await pass_connect(session=session, round_=round_, question=connect, actor=actor), None
    parked = await parked_for_links(session, round_)
    if parked is not None:
        return await pass_links(session=session, round_=round_, parked=parked, actor=actor), None
    now = utcnow()
    if round_.held:  # the request is still out: the console holding it sends the answers on it
        others_open = exists().where(
            CallRound.call_id == round_.call_id, CallRound.status == RoundStatus.OPEN
        )
        await session.execute(
            update(Call)
            .where(
                Call.id == round_.call_id,
                Call.status == CallStatus.AWAITING_INPUT,
                ~others_open,
                may_become(CallStatus.RUNNING),
            )
            .values(status=CallStatus.RUNNING, updated_at=now)
        )
        return True, None
    if await end_if_sampling_refused(session=session, round_=round_, actor=actor):
        return False, None
    await session.execute(
        update(Call)
        .where(
            Call.id == round_.call_id,
            Call.status == CallStatus.AWAITING_INPUT,
            may_become(CallStatus.RESUMING),
        )
        .values(status=CallStatus.RESUMING, updated_at=now)
    )
    job = DispatchJob(
        id=new_id(), call_id=round_.call_id, round_id=round_.id, kind=JobKind.RESUME, status=JobStatus.READY
    )
    session.add(job)
    record_event(
        session=session,
        actor=actor,
        action="resume_queued",
        subject_type="round",
        subject_id=round_.id,
        call_id=round_.call_id,
        payload={"round": round_.n},
    )
    return True, job


# What a round still waits for: its pending questions, and the pending requests its agent answers. Built
# once: it runs for every decision.
_PENDING_IN_ROUND = select(
    *(
        select(func.count())
        .select_from(pending_in)
        .where(pending_in.round_id == bindparam("round_id"), pending_in.status == pending)
        .scalar_subquery()
        for pending_in, pending in (
            (Elicitation, QuestionStatus.PENDING),
            (AgentRequest, AgentRequestStatus.PENDING),
        )
    )
)


async def _connect_of(session: AsyncSession, round_: CallRound) -> Elicitation | None:
    """The round's connect question, when it is the console's round waiting for its owner to connect."""
    if CONNECT_METHOD not in round_.input_requests_json:  # most rounds: no query
        return None
    query = select(Elicitation).where(
        Elicitation.round_id == round_.id, Elicitation.mode == QuestionMode.CONNECT
    )
    return (await session.execute(query)).scalar_one_or_none()


def overdue_questions(now: datetime) -> ColumnElement[bool]:
    """The questions `expire_due` answers at `now`."""
    return (Elicitation.status == QuestionStatus.PENDING) & (Elicitation.expires_at <= now)


async def expire_due(*, session: AsyncSession, now: datetime | None = None) -> list[str]:
    """Answer every overdue question (200 at most) as its policy says (cancel or decline) and queue
    resumes, in the caller's transaction.

    Returns the ids of the calls touched.
    """
    now = now or utcnow()
    overdue = overdue_questions(now)
    if not await finds_any(session, overdue):
        return []
    due = (await session.execute(select(Elicitation).where(overdue).limit(200))).scalars().all()
    touched: list[str] = []
    for elicitation in due:
        round_ = await _lock_round(session, elicitation.round_id)
        moved = await session.execute(
            update(Elicitation)
            .where(Elicitation.id == elicitation.id, question_may_become(QuestionStatus.EXPIRED))
            .values(status=QuestionStatus.EXPIRED, decided_at=now)
        )
        if moved.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
            continue
        record_event(
            session=session,
            actor=SYSTEM,
            action="question_expired",
            subject_type="elicitation",
            subject_id=elicitation.id,
            call_id=elicitation.call_id,
            payload={"key": elicitation.key, "answered": elicitation.expiry_action},
        )
        await queue_resume_if_complete(session=session, round_=round_, actor=SYSTEM)
        touched.append(elicitation.call_id)
    return touched


def response_for(elicitation: Elicitation) -> dict[str, Any]:
    """The ElicitResult (a sampling question's: CreateMessageResult) sent back for a decided question."""
    if elicitation.status == QuestionStatus.ACCEPTED:
        if elicitation.mode == QuestionMode.SAMPLING:
            return sampling_result(elicitation.content_json)
        if elicitation.mode == QuestionMode.URL:
            return {"action": "accept"}
        return {"action": "accept", "content": json.loads(elicitation.content_json or "{}")}
    if elicitation.status == QuestionStatus.DECLINED:
        return {"action": "decline"}
    if elicitation.status == QuestionStatus.EXPIRED:
        return {"action": elicitation.expiry_action}
    return {"action": "cancel"}
