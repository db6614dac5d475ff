"""Deciding questions: who may answer, validation, one decision per question, and expiry."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event
from console.calls.models import Call, CallRound, Run
from console.db import utcnow
from console.dispatch.models import DispatchJob
from console.elicitations.models import Elicitation
from console.errors import Conflict, Forbidden, Gone, InvalidInput, NotFound
from console.forms import SchemaError, parse_schema, validate_content
from console.identity import Viewer
from console.identity.models import User
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for

ACTIONS = ("accept", "decline", "cancel")
DECIDED_STATUS = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
PAGE_SIZE = 50


@dataclass(frozen=True)
class QuestionView:
    """A question with the context a person needs to answer it."""

    elicitation: Elicitation
    server: str
    server_where: str
    method: str
    params_json: str
    call_status: str
    run_id: str
    run_title: str
    owner: str
    decided_by: str | None

    @property
    def target(self) -> str:
        """The tool or prompt name, or the resource URI, the question belongs to."""
        params = json.loads(self.params_json)
        return str(params.get("uri") if self.method == "resources/read" else params.get("name"))


@dataclass(frozen=True)
class Decision:
    elicitation: Elicitation
    call_id: str
    resume_queued: bool


def may_answer(viewer: Viewer, elicitation: Elicitation) -> bool:
    """Form questions: the call's owner or an approver of its team; URL questions: the owner only."""
    if viewer.role_in(elicitation.team_id) is None:
        return False
    if viewer.user_id == elicitation.owner_id:
        return True
    return elicitation.mode == "form" and viewer.answers_forms_in(elicitation.team_id)


async def list_questions(
    *,
    session: AsyncSession,
    viewer: Viewer,
    status: str = "pending",
    before: str | None = None,
    limit: int = PAGE_SIZE,
    team_id: str | None = None,
    server: str | None = None,
    mode: str | None = None,
) -> list[QuestionView]:
    """Questions the viewer may answer, newest first, keyset-paginated by (created_at, id)."""
    answering = [t for t in viewer.roles if viewer.answers_forms_in(t)]
    mine = Elicitation.owner_id == viewer.user_id
    query = _question_query().where(
        Elicitation.status == status,
        Elicitation.team_id.in_(list(viewer.roles)),
        mine | ((Elicitation.mode == "form") & Elicitation.team_id.in_(answering)),
    )
    if team_id is not None:
        query = query.where(Elicitation.team_id == team_id)
    if server is not None:
        query = query.where(McpServer.name == server)
    if mode is not None:
        query = query.where(Elicitation.mode == mode)
    if before is not None:
        anchor = await session.get(Elicitation, before)
        if anchor is None:
            raise NotFound(f"no question {before!r}")
        query = query.where(
            (Elicitation.created_at < anchor.created_at)
            | ((Elicitation.created_at == anchor.created_at) & (Elicitation.id < anchor.id))
        )
    query = query.order_by(Elicitation.created_at.desc(), Elicitation.id.desc()).limit(limit)
    views = [_view(row) for row in (await session.execute(query)).all()]
    await session.commit()  # end the read: on SQLite an open transaction holds the write lock
    return views


async def inbox_fingerprint(*, session: AsyncSession, viewer: Viewer) -> tuple[int, str, str]:
    """Changes whenever a question the viewer could see arrives or is decided (cheap to poll)."""
    teams = list(viewer.roles)
    row = (
        await session.execute(
            select(
                func.count().filter(Elicitation.status == "pending"),
                func.max(Elicitation.created_at),
                func.max(Elicitation.decided_at),
            ).where(Elicitation.team_id.in_(teams))
        )
    ).one()
    await session.commit()
    return int(row[0] or 0), str(row[1]), str(row[2])


async def get_question(*, session: AsyncSession, viewer: Viewer, elicitation_id: str) -> QuestionView:
    """Raises: NotFound when it does not exist or the caller may not answer it."""
    row = (await session.execute(_question_query().where(Elicitation.id == elicitation_id))).one_or_none()
    await session.commit()
    if row is None or not may_answer(viewer, row[0]):
        raise NotFound(f"no question {elicitation_id!r}")
    return _view(row)


async def look_at_question(*, session: AsyncSession, viewer: Viewer, elicitation_id: str) -> QuestionView:
    """A question the viewer may answer, or may merely see because they may see its run.

    Raises: NotFound otherwise.
    """
    row = (await session.execute(_question_query().where(Elicitation.id == elicitation_id))).one_or_none()
    await session.commit()
    if row is None:
        raise NotFound(f"no question {elicitation_id!r}")
    elicitation: Elicitation = row[0]
    if not (may_answer(viewer, elicitation) or viewer.sees_run(elicitation.team_id, elicitation.owner_id)):
        raise NotFound(f"no question {elicitation_id!r}")
    return _view(row)


async def asked_again(*, session: AsyncSession, elicitation: Elicitation) -> str | None:
    """The pending re-ask of this very link in the same call, if the server asked again."""
    query = select(Elicitation.id).where(
        Elicitation.call_id == elicitation.call_id,
        Elicitation.mode == "url",
        Elicitation.url == elicitation.url,
        Elicitation.status == "pending",
    )
    found = (await session.execute(query.limit(1))).scalar_one_or_none()
    await session.commit()
    return found


async def consented_before(*, session: AsyncSession, elicitation: Elicitation) -> bool:
    """Whether the owner already agreed to open this very URL earlier in the same call."""
    if elicitation.mode != "url" or elicitation.url is None:
        return False
    earlier = await session.execute(
        select(func.count())
        .select_from(Elicitation)
        .where(
            Elicitation.call_id == elicitation.call_id,
            Elicitation.id != elicitation.id,
            Elicitation.mode == "url",
            Elicitation.url == elicitation.url,
            Elicitation.status == "accepted",
        )
    )
    count = earlier.scalar_one()
    await session.commit()
    return bool(count)


def _question_query() -> Any:
    decider = select(User.name).where(User.id == Elicitation.decided_by).scalar_subquery()
    owner = select(User.name).where(User.id == Elicitation.owner_id).scalar_subquery()
    return (
        select(
            Elicitation,
            McpServer,
            Call.method,
            Call.params_json,
            Call.status,
            Run.id,
            Run.title,
            owner,
            decider,
        )
        .join(Call, Call.id == Elicitation.call_id)
        .join(Run, Run.id == Call.run_id)
        .join(McpServer, McpServer.id == Call.server_id)
        .execution_options(populate_existing=True)
    )


def _view(row: Any) -> QuestionView:
    elicitation, server, *rest = row
    return QuestionView(elicitation, server.name, endpoint_for(server).describe(), *rest)


async def answer(
    *,
    session: AsyncSession,
    viewer: Viewer,
    elicitation_id: str,
    action: str,
    content: Any = None,
    digest: str | None = None,
) -> Decision:
    """Record one person's decision; when it completes its round, queue exactly one resume.

    Raises:
        NotFound, Forbidden (URL questions belong to the call's owner), Gone (expired),
        Conflict (already answered, or changed since it was shown), InvalidInput (with field errors).
    """
    elicitation = await session.get(Elicitation, elicitation_id)
    if elicitation is None or viewer.role_in(elicitation.team_id) is None:
        raise NotFound(f"no question {elicitation_id!r}")
    # Lock the round first: decisions on one round are serialised, so exactly one of them sees the
    # round complete and queues the resume.
    round_ = await _lock_round(session, elicitation.round_id)
    await session.refresh(elicitation)
    await _authorise(session, viewer, elicitation, action)
    await _ensure_open(session, elicitation, digest)
    content_json = _checked_content(elicitation, action, content)
    now = utcnow()
    result = await session.execute(
        update(Elicitation)
        .where(Elicitation.id == elicitation.id, Elicitation.status == "pending")
        .values(
            status=DECIDED_STATUS[action],
            content_json=content_json,
            decided_by=viewer.user_id,
            decided_at=now,
        )
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        await session.rollback()
        await _raise_already_decided(session, elicitation_id)
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
    queued = await queue_resume_if_complete(session=session, round_=round_, actor=viewer.actor)
    await session.commit()
    await session.refresh(elicitation)
    return Decision(elicitation, elicitation.call_id, queued)


async def _lock_round(session: AsyncSession, round_id: str) -> CallRound:
    query = select(CallRound).where(CallRound.id == round_id).with_for_update()
    return (await session.execute(query)).scalar_one()


async def _authorise(session: AsyncSession, viewer: Viewer, elicitation: Elicitation, action: str) -> None:
    """Raises Forbidden, after committing an audit event of the refused attempt."""
    if may_answer(viewer, elicitation):
        return
    if elicitation.mode == "url":
        reason = "a URL question can only be answered by the person whose agent made the call"
    else:
        reason = "only the call's owner or an approver of the team can answer this question"
    await refuse(
        session=session, viewer=viewer, elicitation=elicitation, what=f"answer:{action}"[:40], reason=reason
    )


async def refuse(
    *, session: AsyncSession, viewer: Viewer, elicitation: Elicitation, what: str, reason: str
) -> None:
    """Record a refused attempt on a question (its own transaction, so it outlives the refusal) and raise.

    Raises:
        Forbidden: always.
    """
    subject, call_id, mode = elicitation.id, elicitation.call_id, elicitation.mode
    await session.rollback()  # nothing of the refused attempt is kept, only the record of it
    record_event(
        session=session,
        actor=viewer.actor,
        action="access_refused",
        subject_type="elicitation",
        subject_id=subject,
        call_id=call_id,
        payload={"attempt": what, "reason": reason, "mode": mode},
    )
    await session.commit()
    raise Forbidden(reason)


async def _ensure_open(session: AsyncSession, elicitation: Elicitation, digest: str | None) -> None:
    if elicitation.status == "expired":
        raise Gone("this question expired and was answered cancel")
    if elicitation.status != "pending":
        await _raise_already_decided(session, elicitation.id)
    if elicitation.expires_at <= utcnow():
        raise Gone("this question expired")
    if digest is not None and digest != elicitation.digest:
        raise Conflict("the question changed since it was shown; reload it")


async def _raise_already_decided(session: AsyncSession, elicitation_id: str) -> None:
    row = (
        await session.execute(
            select(Elicitation.status, User.name)
            .outerjoin(User, User.id == Elicitation.decided_by)
            .where(Elicitation.id == elicitation_id)
        )
    ).one()
    status, who = row
    if status == "expired":
        raise Gone("this question expired and was answered cancel")
    raise Conflict(f"already answered: {status} by {who or 'the console'}")


def _checked_content(elicitation: Elicitation, action: str, content: Any) -> str | None:
    if action not in ACTIONS:
        raise InvalidInput("invalid answer", {"action": f"must be one of {', '.join(ACTIONS)}"})
    if action != "accept":
        return None
    if elicitation.mode == "url":
        if content is not None:
            raise InvalidInput("invalid answer", {"content": "a URL question is accepted without content"})
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
    """If no question of the round is pending, mark it ready and add its one dispatch job."""
    pending = (
        await session.execute(
            select(func.count())
            .select_from(Elicitation)
            .where(Elicitation.round_id == round_.id, Elicitation.status == "pending")
        )
    ).scalar_one()
    if pending:
        return False
    moved = await session.execute(
        update(CallRound).where(CallRound.id == round_.id, CallRound.status == "open").values(status="ready")
    )
    if moved.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        return False
    now = utcnow()
    session.add(DispatchJob(call_id=round_.call_id, round_id=round_.id, kind="resume", status="ready"))
    await session.execute(
        update(Call)
        .where(Call.id == round_.call_id, Call.status == "awaiting_input")
        .values(status="resuming", updated_at=now)
    )
    record_event(
        session=session,
        actor=actor,
        action="resume_queued",
        subject_type="round",
        subject_id=round_.id,
        call_id=round_.call_id,
        payload={"round": round_.n},
    )
    return True


async def expire_due(*, session: AsyncSession, now: datetime | None = None) -> list[str]:
    """Answer every overdue question `cancel` (so the server learns) and queue resumes; returns call ids."""
    now = now or utcnow()
    due = (
        (
            await session.execute(
                select(Elicitation)
                .where(Elicitation.status == "pending", Elicitation.expires_at <= now)
                .limit(200)
            )
        )
        .scalars()
        .all()
    )
    touched: list[str] = []
    for elicitation in due:
        round_ = await _lock_round(session, elicitation.round_id)
        moved = await session.execute(
            update(Elicitation)
            .where(Elicitation.id == elicitation.id, Elicitation.status == "pending")
            .values(status="expired", decided_at=now)
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
            payload={"key": elicitation.key},
        )
        await queue_resume_if_complete(session=session, round_=round_, actor=SYSTEM)
        touched.append(elicitation.call_id)
    await session.commit()
    return touched


def response_for(elicitation: Elicitation) -> dict[str, Any]:
    """The ElicitResult sent back to the server for a decided question."""
    if elicitation.status == "accepted":
        if elicitation.mode == "url":
            return {"action": "accept"}
        return {"action": "accept", "content": json.loads(elicitation.content_json or "{}")}
    if elicitation.status == "declined":
        return {"action": "decline"}
    return {"action": "cancel"}
