"""Finding questions: the inbox, one question with its context and signatures, link re-asks."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, NoReturn
from urllib.parse import urlsplit

from sqlalchemy import bindparam, exists, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.calls.models import POLICY_MODES, Call, CallRound, Elicitation, Run, Signature
from console.calls.questions.decisions import may_answer, refuse
from console.calls.states import QuestionMode, QuestionStatus, SignatureAction
from console.db import reads_without_begin
from console.errors import InvalidInput, NotFound
from console.identity import Viewer
from console.identity.models import User
from console.identity.viewer import OUTSIDER
from console.mcp.models import McpServer
from console.policies.rules import OWNER_ONLY_MODES
from console.transactions import end_read

PAGE_SIZE = 50
DECIDED = ("accepted", "declined", "cancelled", "expired", "superseded", "interrupted")


@dataclass(frozen=True)
class SignatureView:
    user: str
    action: str
    at: datetime


@dataclass(frozen=True)
class QuestionView:
    """A question with the context a person needs to answer it."""

    elicitation: Elicitation
    server: str
    server_where: str  # an HTTP server's host; empty for a local (stdio) server, known by its name alone
    method: str
    params_json: str
    call_status: str
    called_at: datetime
    run_id: str
    run_title: str
    owner: str
    decided_by: str | None
    agent: str
    input_requests_json: str  # the round's, as received (a gate's: what the console keeps of the tool)
    # Live: an older server holds the call open for the answer (until the question expires); otherwise
    # the question is parked and the call is sent again once it is answered.
    live: bool
    task: bool  # the server runs the call as a task (the tasks extension) that waits for the answer
    signatures: tuple[SignatureView, ...] = ()

    @property
    def asked(self) -> dict[str, Any]:
        """The input request this question came from (a gate's: the tool's description, annotations and
        inputSchema as the server listed them — untrusted text)."""
        requests = json.loads(self.input_requests_json or "{}")
        found = requests.get(self.elicitation.key) if isinstance(requests, dict) else None
        params = found.get("params") if isinstance(found, dict) else None
        return params if isinstance(params, dict) else {}

    @property
    def arguments(self) -> Any:
        """The arguments the agent sent (tools and prompts)."""
        return json.loads(self.params_json).get("arguments") or {}

    @property
    def policy(self) -> dict[str, Any]:
        """Which rules set the question's policy, and whether its tool counted as destructive."""
        value = json.loads(self.elicitation.policy_json or "{}")
        return value if isinstance(value, dict) else {}

    @property
    def decided_where(self) -> str | None:
        """Where the decision was made, in words: "in the browser", "through the API", "in their agent"."""
        return decided_where(self.elicitation.decided_via)

    def signed_by(self, user_name: str) -> bool:
        return any(s.user == user_name for s in self.signatures)

    @property
    def approvals(self) -> int:
        return sum(1 for s in self.signatures if s.action == SignatureAction.ACCEPT)

    @property
    def answer(self) -> dict[str, Any]:
        """The accepted content (an N-of-M question's is fixed by its first accept); empty otherwise."""
        value = json.loads(self.elicitation.content_json or "{}")
        return value if isinstance(value, dict) else {}

    @property
    def target(self) -> str:
        """The tool or prompt name, or the resource URI, the question belongs to."""
        params = json.loads(self.params_json)
        return str(params.get("uri") if self.method == "resources/read" else params.get("name"))


RESTORED = "restore"  # decided_via of a question closed because the database was restored from a backup


def decided_where(via: str | None) -> str | None:
    if via is None:
        return None
    if via.startswith("mcp:"):
        return "in their agent (MCP)"
    if via.startswith("token:"):
        return "through the API"
    if via == "server":
        return "by the server (it said the link's flow is done)"
    if via == RESTORED:
        return "closed by the console, as the database was restored from a backup taken before its answer"
    return "in the browser"


async def list_questions(
    *,
    session: AsyncSession,
    viewer: Viewer,
    status: str = QuestionStatus.PENDING,
    before: str | None = None,
    limit: int = PAGE_SIZE,
    team_id: str | None = None,
    server: str | None = None,
    mode: str | None = None,
) -> list[QuestionView]:
    """Questions the viewer may answer under their policies, newest first, keyset-paginated.

    The same rules as `may_answer`, in SQL; a question the viewer already signed is left out.
    """
    await reads_without_begin(session)
    answering = [t for t in viewer.roles if viewer.answers_forms_in(t)]
    mine = Elicitation.owner_id == viewer.user_id
    owner_may = Elicitation.mode.in_(OWNER_ONLY_MODES) | (
        ~Elicitation.no_self_approval & (Elicitation.answerers != "approvers")
    )
    approver_may = (
        Elicitation.mode.in_(POLICY_MODES)
        & Elicitation.team_id.in_(answering)
        & (Elicitation.answerers != "owner")
    )
    signed = exists().where(Signature.elicitation_id == Elicitation.id, Signature.user_id == viewer.user_id)
    query = _question_query().where(
        Elicitation.status == status,
        Elicitation.team_id.in_([t for t in viewer.roles if not viewer.read_only_in(t)]),
        (mine & owner_may) | (~mine & approver_may),
        ~signed,
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
    signatures = await signatures_of(session=session, questions=[v.elicitation for v in views])
    await end_read(session)
    return [replace(v, signatures=signatures.get(v.elicitation.id, ())) for v in views]


async def list_decided(
    *,
    session: AsyncSession,
    viewer: Viewer,
    status: str | None = None,
    before: str | None = None,
    limit: int = PAGE_SIZE,
    team_id: str | None = None,
) -> list[QuestionView]:
    """Questions no longer pending in runs the viewer may see, most recently decided first, keyset-paginated.

    Raises:
        NotFound: `before` names no question of this list.
    """
    await reads_without_begin(session)
    visible = Elicitation.team_id.in_(list(viewer.roles)) & (
        (Elicitation.owner_id == viewer.user_id) | Elicitation.team_id.in_(viewer.teams_seeing_every_run)
    )
    decided = Elicitation.status.in_([status] if status is not None else DECIDED)
    query = _question_query().where(visible, decided, Elicitation.decided_at.is_not(None))
    if team_id is not None:
        query = query.where(Elicitation.team_id == team_id)
    if before is not None:
        anchor = (
            await session.execute(select(Elicitation).where(Elicitation.id == before, visible, decided))
        ).scalar_one_or_none()
        if anchor is None or anchor.decided_at is None:
            raise NotFound(f"no decided question {before!r}")
        query = query.where(
            (Elicitation.decided_at < anchor.decided_at)
            | ((Elicitation.decided_at == anchor.decided_at) & (Elicitation.id < anchor.id))
        )
    query = query.order_by(Elicitation.decided_at.desc(), Elicitation.id.desc()).limit(limit)
    views = [_view(row) for row in (await session.execute(query)).all()]
    signatures = await signatures_of(session=session, questions=[v.elicitation for v in views])
    await end_read(session)
    return [replace(v, signatures=signatures.get(v.elicitation.id, ())) for v in views]


# Longer than any transaction that stamps a question takes to commit: one that commits after a later-stamped
# one still lands this close to the newest stamp, where the fingerprint counts.
RECENT = timedelta(minutes=1)


async def inbox_fingerprint(*, session: AsyncSession, viewer: Viewer) -> tuple[object, ...]:
    """Changes whenever a question the viewer could see arrives, is signed or is decided (cheap to poll).

    For arrivals (pending questions), decisions and signatures alike: the newest stamp, and how many carry
    a stamp within `RECENT` of it, which catches one committed after a later-stamped one. Every part is
    an index seek or a short index range (`ix_elicitation_inbox`, `ix_elicitation_decided`), so the cost
    does not grow with the questions waiting or decided long ago.
    """
    await reads_without_begin(session)  # polled by every live inbox at every change
    in_teams = Elicitation.team_id.in_(list(viewer.roles))
    parts = (
        (Elicitation.created_at, (Elicitation.status == QuestionStatus.PENDING) & in_teams),
        (Elicitation.decided_at, in_teams),
        (Signature.signed_at, exists().where(Elicitation.id == Signature.elicitation_id, in_teams)),
    )
    newest = (
        await session.execute(
            select(*(select(func.max(stamp)).where(where).scalar_subquery() for stamp, where in parts))
        )
    ).one()
    recent = [
        select(func.count()).where(where, stamp >= at - RECENT).scalar_subquery()
        for (stamp, where), at in zip(parts, newest, strict=True)
        if at is not None
    ]
    counts = (await session.execute(select(*recent))).one() if recent else ()
    await end_read(session)
    return (*newest, *counts)


async def look_at_question(
    *, session: AsyncSession, viewer: Viewer, elicitation_id: str, attempt: str = "view"
) -> QuestionView:
    """A question the viewer may answer, or may merely see because they may see its run.

    Raises: NotFound otherwise (recorded as `access_refused`, named by `attempt`, if the question exists).
    """
    await reads_without_begin(session)
    row = (await session.execute(_QUESTION_BY_ID, {"elicitation_id": elicitation_id})).one_or_none()
    if row is None:
        raise NotFound(f"no question {elicitation_id!r}")
    elicitation: Elicitation = row[0]
    if not (may_answer(viewer, elicitation) or viewer.sees_run(elicitation.team_id, elicitation.owner_id)):
        reason = (
            OUTSIDER
            if viewer.role_in(elicitation.team_id) is None
            else "a member sees only the questions of their own runs"
        )
        _hide(session, viewer, elicitation, attempt, reason)
    return await _with_signatures(session, _view(row))  # in the same read


async def read_question(
    *, session: AsyncSession, viewer: Viewer, elicitation_id: str, attempt: str = "view"
) -> QuestionView:
    """A question with all it carries; a link only ever to its owner (the same-user rule).

    Raises: NotFound for anyone else (recorded as `access_refused`, as for other teams' questions).
    """
    view = await look_at_question(
        session=session, viewer=viewer, elicitation_id=elicitation_id, attempt=attempt
    )
    if view.elicitation.mode in OWNER_ONLY_MODES and view.elicitation.owner_id != viewer.user_id:
        what = "this link" if view.elicitation.mode == QuestionMode.URL else "connecting this account"
        _hide(session, viewer, view.elicitation, attempt, f"{what} is for {view.owner} only")
    return view


async def look_at_own_link(
    *, session: AsyncSession, viewer: Viewer, elicitation_id: str, attempt: str
) -> QuestionView:
    """A link question, for the person whose agent asked it: only they may see and open the link.

    Raises:
        NotFound, InvalidInput (the question is a form), Forbidden (anyone else; recorded as `attempt`).
    """
    view = await look_at_question(session=session, viewer=viewer, elicitation_id=elicitation_id)
    if view.elicitation.mode != QuestionMode.URL:
        raise InvalidInput("this question is a form, not a link")
    if view.elicitation.owner_id != viewer.user_id:
        refuse(
            session=session,
            viewer=viewer,
            elicitation=view.elicitation,
            what=attempt,
            reason=f"this link is for {view.owner} only: only they may see and open it",
        )
    return view


def _hide(
    session: AsyncSession, viewer: Viewer, elicitation: Elicitation, attempt: str, reason: str
) -> NoReturn:
    """Refuse as if the question did not exist (NotFound), recording why."""
    refuse(
        session=session,
        viewer=viewer,
        elicitation=elicitation,
        what=attempt,
        reason=reason,
        error=NotFound(f"no question {elicitation.id!r}"),
    )


async def _with_signatures(session: AsyncSession, view: QuestionView) -> QuestionView:
    signatures = await signatures_of(session=session, questions=[view.elicitation])
    await end_read(session)
    return replace(view, signatures=signatures.get(view.elicitation.id, ()))


async def signatures_of(
    *, session: AsyncSession, questions: Iterable[Elicitation]
) -> dict[str, tuple[SignatureView, ...]]:
    """The signatures of these questions (N-of-M approvals) by question id, oldest first; a read query,
    only for questions that needed more than one approval (no other question is ever signed)."""
    ids = [question.id for question in questions if question.required_approvals > 1]
    if not ids:
        return {}
    rows = (
        await session.execute(
            select(Signature.elicitation_id, User.name, Signature.action, Signature.signed_at)
            .join(User, User.id == Signature.user_id)
            .where(Signature.elicitation_id.in_(ids))
            .order_by(Signature.signed_at, Signature.id)
        )
    ).all()
    found: dict[str, list[SignatureView]] = {}
    for elicitation_id, user, action, at in rows:
        found.setdefault(elicitation_id, []).append(SignatureView(user, action, at))
    return {key: tuple(value) for key, value in found.items()}


async def asked_again(*, session: AsyncSession, elicitation: Elicitation) -> str | None:
    """The pending re-ask of this very link in the same call, if the server asked again."""
    query = select(Elicitation.id).where(
        Elicitation.call_id == elicitation.call_id,
        Elicitation.mode == QuestionMode.URL,
        Elicitation.url == elicitation.url,
        Elicitation.status == QuestionStatus.PENDING,
    )
    found = (await session.execute(query.limit(1))).scalar_one_or_none()
    await end_read(session)
    return found


async def consented_before(*, session: AsyncSession, elicitation: Elicitation) -> bool:
    """Whether the owner already agreed to open this very URL earlier in the same call."""
    if elicitation.mode != QuestionMode.URL or elicitation.url is None:
        return False
    earlier = await session.execute(
        select(func.count())
        .select_from(Elicitation)
        .where(
            Elicitation.call_id == elicitation.call_id,
            Elicitation.id != elicitation.id,
            Elicitation.mode == QuestionMode.URL,
            Elicitation.url == elicitation.url,
            Elicitation.status == QuestionStatus.ACCEPTED,
        )
    )
    count = earlier.scalar_one()
    await end_read(session)
    return bool(count)


async def reopen_link(*, session: AsyncSession, viewer: Viewer, elicitation: Elicitation) -> bool:
    """Whether the owner may open a re-asked link again without answering it (they agreed to it earlier).

    Opening it again is recorded in the caller's transaction; the question stays pending until the owner
    checks again.
    """
    if elicitation.status != QuestionStatus.PENDING or elicitation.owner_id != viewer.user_id:
        return False
    if not await consented_before(session=session, elicitation=elicitation):
        return False
    record_event(
        session=session,
        actor=viewer.actor,
        action="link_reopened",
        subject_type="elicitation",
        subject_id=elicitation.id,
        call_id=elicitation.call_id,
        payload={"key": elicitation.key},
    )
    return True


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
            Call.created_at,
            Run.id,
            Run.title,
            owner,
            decider,
            Run.agent,
            CallRound.input_requests_json,
            CallRound.held,
            Call.task_id.is_not(None),
        )
        .join(Call, Call.id == Elicitation.call_id)
        .join(Run, Run.id == Call.run_id)
        .join(CallRound, CallRound.id == Elicitation.round_id)
        .join(McpServer, McpServer.id == Call.server_id)
        .execution_options(populate_existing=True)
    )


# Built once: it runs for every answer and every question opened.
_QUESTION_BY_ID = _question_query().where(Elicitation.id == bindparam("elicitation_id"))


def _view(row: Any) -> QuestionView:
    elicitation, server, *rest = row
    return QuestionView(elicitation, server.name, _host(server), *rest)


def _host(server: McpServer) -> str:
    """Where an HTTP server lives, for people; a stdio server's command line is the operator's business."""
    if server.transport != "http" or not server.url:
        return ""
    parts = urlsplit(server.url)
    return f"{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"
