"""The call aggregate's tables: runs, calls, their input_required rounds, each round's questions with
their signatures, and the outbox of requests the dispatcher must send."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    bindparam,
    false,
    inspect,
    select,
)
from sqlalchemy.orm import Mapped, Session, mapped_column
from sqlalchemy.orm.util import identity_key

from console.audit.chain import EventContext, finds_context, holds_context
from console.calls.states import AgentRequestStatus, QuestionMode
from console.db import Base, M, UtcDateTime, new_id, utcnow
from console.mcp.models import McpServer

METHODS = ("tools/call", "prompts/get", "resources/read")
# A question is a form, a link (url), a gate (the console's own, before sending), a sampling reply or a
# connect (the console's own: the owner connects their account at an OAuth-protected server). Forms, gates
# and sampling replies are answered as the team's policy says (who, how many, how recently signed in): a
# link and a connect are their owner's alone (policies.rules.OWNER_ONLY_MODES). Forms and sampling
# replies are answered with the form generated from a schema.
POLICY_MODES = (QuestionMode.FORM, QuestionMode.GATE, QuestionMode.SAMPLING)
FORM_MODES = (QuestionMode.FORM, QuestionMode.SAMPLING)


class Run(Base):
    __tablename__ = "run"
    __table_args__ = (
        Index("ix_run_team_created", "team_id", "created_at"),  # the runs list, newest first
        UniqueConstraint("team_id", "gateway_key"),
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    agent: Mapped[str] = mapped_column(String(200), default="")
    title: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # Which agent connection, token and day, or agent-chosen name the MCP gateway files its calls under.
    gateway_key: Mapped[str | None] = mapped_column(String(300), default=None)


class Call(Base):
    """One MCP request being driven to its end; `params_json` is the agent's text, byte for byte."""

    __tablename__ = "call"
    # A server's recent calls, newest first (the advice to pin its protocol, console/calls/pin_advice.py)
    __table_args__ = (Index("ix_call_server_created", "server_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    run_id: Mapped[str] = mapped_column(ForeignKey("run.id"), index=True)
    server_id: Mapped[str] = mapped_column(ForeignKey("mcp_server.id"))
    method: Mapped[str] = mapped_column(String(30))
    params_json: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), index=True)
    round: Mapped[int] = mapped_column(Integer, default=0)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    result_json: Mapped[str | None] = mapped_column(Text, default=None)
    error_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The tool's annotations as the server listed them when the call started (policies read them).
    tool_annotations_json: Mapped[str | None] = mapped_column(Text, default=None)
    # Input requests the agent itself answers (a JSON list: "sampling/createMessage", "roots/list"), as
    # its client declared them through the MCP gateway; the server is told the console supports them.
    relayed_json: Mapped[str | None] = mapped_column(Text, default=None)
    # The agent's 2025-11-25 gateway session, when its client answers roots: the call's requests go on a
    # connection of that session, whose server is told the agent's roots (console/mcp/agent_roots.py).
    gateway_session: Mapped[str | None] = mapped_column(String(100), default=None)
    # People write the replies to the server's sampling requests: the team's policy said so when the call
    # started, so every request of the call declares sampling (console/calls/declared.py).
    people_sample: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The params sent instead of the agent's, when the approvers of its gate changed the arguments.
    approved_params_json: Mapped[str | None] = mapped_column(Text, default=None)
    # The latest progress the server reported for the call's requests: {progress, total, message, at}.
    progress_json: Mapped[str | None] = mapped_column(Text, default=None)
    # The server runs the call as a task (the tasks extension): its id, which every poll, answer and
    # cancel names. Set once the server created it; the dispatcher follows it from any console process.
    task_id: Mapped[str | None] = mapped_column(String(256), default=None)
    # The latest log messages its server sent while the call's requests were out
    # (calls/server_reports/logs.py): {"entries": [{level, logger, message, at}, ...], "dropped": n}.
    logs_json: Mapped[str | None] = mapped_column(Text, default=None)
    # Where the console POSTs the call when it needs input, finishes or fails, signed with the webhook
    # secret of the API token that started it (console/calls/notices.py).
    callback_url: Mapped[str | None] = mapped_column(Text, default=None)
    callback_token_id: Mapped[str | None] = mapped_column(String(32), default=None)
    # Whether the call ever asked a person (a question was created for it): its end is then announced.
    asked_people: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    @property
    def progress(self) -> dict[str, Any] | None:
        """The latest progress the server reported, if any."""
        return json.loads(self.progress_json) if self.progress_json else None

    @property
    def logs(self) -> dict[str, Any]:
        """The log messages kept, oldest first, and how many earlier ones were dropped."""
        return json.loads(self.logs_json) if self.logs_json else {"entries": [], "dropped": 0}

    @property
    def sent_params_json(self) -> str:
        """The params every request of this call carries."""
        return self.approved_params_json or self.params_json


class CallRound(Base):
    """One input_required answer from the server, kept as received.

    `request_state_json` is the requestState as a JSON string literal (ASCII escapes), so every
    string a server can send, NUL and lone surrogates included, survives any database unchanged.
    """

    __tablename__ = "call_round"
    __table_args__ = (UniqueConstraint("call_id", "n"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    n: Mapped[int] = mapped_column(Integer)
    input_requests_json: Mapped[str] = mapped_column(Text)
    request_state_json: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[str] = mapped_column(String(20))  # RoundStatus, moving as ROUNDS allows (calls/states.py)
    # Pushed by an older server while the console holds its request open: answered on that request
    # (ready -> answered), never by sending the call again.
    held: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    error_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Elicitation(Base):
    __tablename__ = "elicitation"
    __table_args__ = (
        Index("ix_elicitation_inbox", "status", "team_id", "created_at"),
        Index("ix_elicitation_decided", "team_id", "decided_at"),  # the Decided view, newest first
    )

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    round_id: Mapped[str] = mapped_column(ForeignKey("call_round.id"), index=True)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"))
    owner_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    key: Mapped[str] = mapped_column(Text)
    mode: Mapped[str] = mapped_column(String(10))  # a QuestionMode (see POLICY_MODES)
    message: Mapped[str] = mapped_column(Text)
    schema_json: Mapped[str | None] = mapped_column(Text, default=None)
    url: Mapped[str | None] = mapped_column(Text, default=None)
    request_digest: Mapped[str] = mapped_column(String(64))
    digest: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(20))  # QuestionStatus, moving as QUESTIONS allows
    content_json: Mapped[str | None] = mapped_column(Text, default=None)
    decided_by: Mapped[str | None] = mapped_column(ForeignKey("identity_user.id"), default=None)
    # Where the decision was made: "session" (a browser), "token:<id>" (the API), "mcp:<token id>" (the
    # person's own agent, through the MCP gateway).
    decided_via: Mapped[str | None] = mapped_column(String(80), default=None)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    reapplied_from: Mapped[str | None] = mapped_column(String(32), default=None)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The policy the question was asked under (see console/policies), fixed when it arrives.
    answerers: Mapped[str] = mapped_column(
        String(20), default="owner_or_approvers", server_default="owner_or_approvers"
    )
    no_self_approval: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    required_approvals: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    step_up_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    expiry_action: Mapped[str] = mapped_column(String(10), default="cancel", server_default="cancel")
    policy_json: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")  # which rules applied
    # With N-of-M approval the first accept fixes the content; co-signers sign this digest of it.
    content_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    # A gate question (mode "gate"): whether approvers may change the call's arguments.
    allow_edit: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Who is emailed when it is still unanswered after so many minutes (policies.rules.Escalation).
    escalate_after_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    escalate_to: Mapped[str | None] = mapped_column(String(300), default=None)


class AgentRequest(Base):
    """An input request of a round that the call's agent answers (sampling, roots), not a person.

    Status: an AgentRequestStatus, moving as AGENT_REQUESTS allows (console/calls/states.py).
    """

    __tablename__ = "agent_request"
    __table_args__ = (UniqueConstraint("round_id", "key"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    round_id: Mapped[str] = mapped_column(ForeignKey("call_round.id"), index=True)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"))
    key: Mapped[str] = mapped_column(Text)
    method: Mapped[str] = mapped_column(String(40))
    params_json: Mapped[str] = mapped_column(Text)  # as the server sent it
    status: Mapped[str] = mapped_column(String(20), default=AgentRequestStatus.PENDING)
    response_json: Mapped[str | None] = mapped_column(Text, default=None)
    answered_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Signature(Base):
    """One approver's accept, co-sign or decline of a question that needs several approvers."""

    __tablename__ = "elicitation_signature"
    __table_args__ = (UniqueConstraint("elicitation_id", "user_id"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    elicitation_id: Mapped[str] = mapped_column(ForeignKey("elicitation.id"), index=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"))
    action: Mapped[str] = mapped_column(String(10))  # a SignatureAction
    content_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    via: Mapped[str | None] = mapped_column(String(60), default=None)
    signed_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class DispatchJob(Base):
    """`kind` (a JobKind) is initial (first send), resume (a ready round) or restart (round 1 after rejected
    state); for a call the server runs as a task, poll (tasks/get), resume (tasks/update with a round's
    answers) or cancel (tasks/cancel).

    Status (a JobStatus, moving as JOBS allows): ready -> claimed -> sending -> done; a `sending` row whose
    lease ran out was sent by a process that died before recording the outcome: it becomes `interrupted`,
    never resent silently.
    """

    __tablename__ = "dispatch_job"
    __table_args__ = (Index("ix_dispatch_job_due", "status", "not_before"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    round_id: Mapped[str | None] = mapped_column(ForeignKey("call_round.id"), unique=True, default=None)
    kind: Mapped[str] = mapped_column(String(10))
    restart_of: Mapped[str | None] = mapped_column(
        String(32), default=None
    )  # the round whose state was refused
    status: Mapped[str] = mapped_column(String(12))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    not_before: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), default=None)
    claimed_by: Mapped[str | None] = mapped_column(String(64), default=None)
    last_error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The approval attestation its first send carried (console/attestation.py): every later send of the
    # job carries the same one, so a server can refuse a second use, and it expires with the first.
    attestation: Mapped[str | None] = mapped_column(Text, default=None)


@holds_context("call")
def _held_call_context(session: Session, call_id: str) -> EventContext | None:
    call = _loaded(session, Call, call_id, "run_id", "server_id", "params_json")
    run = None if call is None else _loaded(session, Run, call.run_id, "team_id")
    server = None if call is None else _loaded(session, McpServer, call.server_id, "name")
    if call is not None and run is not None and server is not None:
        return EventContext(team_id=run.team_id, server=server.name, tool=call_target(call.params_json))
    return None


@finds_context("call")
def _call_context(session: Session, call_id: str) -> EventContext | None:
    held = _held_call_context(session, call_id)
    if held is not None:
        return held
    found = session.execute(_CALL_CONTEXT, {"call_id": call_id}).one_or_none()
    if found is None:
        return None
    team_id, server_name, params_json = found
    return EventContext(team_id=team_id, server=server_name, tool=call_target(params_json))


# One query for what the session has not loaded already. Built once: it runs in most write transactions.
_CALL_CONTEXT = (
    select(Run.team_id, McpServer.name, Call.params_json)
    .select_from(Call)
    .join(Run, Run.id == Call.run_id)
    .join(McpServer, McpServer.id == Call.server_id)
    .where(Call.id == bindparam("call_id"))
)


def _loaded(session: Session, model: type[M], key: str, *columns: str) -> M | None:
    """The row if the session holds it already with `columns` loaded (reading them needs no query)."""
    found = session.identity_map.get(identity_key(model, key))
    if not isinstance(found, model) or inspect(found).unloaded.intersection(columns):
        return None
    return found


@finds_context("run")
def _run_context(session: Session, run_id: str) -> EventContext | None:
    run = session.get(Run, run_id)
    return None if run is None else EventContext(team_id=run.team_id)


def call_target(params_json: str) -> str | None:
    """The tool or prompt name, or the resource URI, a call is about."""
    try:
        return params_target(json.loads(params_json))
    except ValueError:
        return None


def params_target(params: Any) -> str | None:
    """`call_target` of params already parsed."""
    if not isinstance(params, dict):
        return None
    target = params.get("name", params.get("uri"))
    return target[:500] if isinstance(target, str) else None
