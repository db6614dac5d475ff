"""JSON shapes of the agent API (documented in the OpenAPI document)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from console.calls.models import Run
from console.calls.objects import kind_of
from console.calls.questions.inbox import QuestionView


class RunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    team: str
    title: str = Field(min_length=1, max_length=500)
    agent: str = Field(default="", max_length=200)


class RunOut(BaseModel):
    id: str
    team: str
    title: str
    agent: str
    owner: str
    created_at: datetime

    @classmethod
    def of(cls, run: Run, *, team: str, owner: str) -> RunOut:
        return cls(
            id=run.id, team=team, title=run.title, agent=run.agent, owner=owner, created_at=run.created_at
        )


class CallIn(BaseModel):
    """Documentation only: the body is read as text so `params` is kept byte for byte."""

    server: str
    method: Literal["tools/call", "prompts/get", "resources/read"]
    params: dict[str, Any]
    callback_url: str | None = Field(
        default=None,
        description="where the console POSTs the call (signed with the token's webhook secret) when it "
        "needs input, completes, fails or is interrupted; https on a public address",
    )


class PolicyOut(BaseModel):
    answerers: Literal["owner", "approvers", "owner_or_approvers"]
    no_self_approval: bool
    required_approvals: int
    step_up_minutes: int | None
    expiry_action: Literal["cancel", "decline"]
    set_by: list[str] = Field(description="the policy rules that applied, least specific first")
    raised_by: str | None = Field(
        default=None,
        description="a gate whose first approver changed the arguments: the rules of the changed arguments "
        "that made this policy stricter than the one it was asked under",
    )


class SignatureOut(BaseModel):
    user: str
    action: str
    at: datetime


class QuestionOut(BaseModel):
    id: str
    call_id: str
    key: str
    kind: Literal["elicitation", "gate", "connect"]
    mode: Literal["form", "url", "gate", "sampling", "connect"]
    message: str
    requested_schema: dict[str, Any] | None = Field(
        default=None,
        description="a form's schema; a gate's whose arguments approvers may change: the tool's inputSchema",
    )
    url: str | None = None
    digest: str
    status: str
    content: dict[str, Any] | None = None
    decided_by: str | None = None
    decided_where: str | None = Field(
        default=None,
        description='"in the browser", "through the API", "in their agent (MCP)", "by the server" (a '
        'link an older server said is done), or "closed by the console" (the database was restored from a '
        "backup taken before its answer)",
    )
    decided_at: datetime | None = None
    expires_at: datetime
    live: bool = Field(
        description="an older server (MCP 2025-11-25) holds the call open for this answer: unanswered at "
        "expires_at, the server is told policy.expiry_action; otherwise the question is parked"
    )
    task: bool = Field(
        description="the server runs the call as a task (the tasks extension) that waits for this answer; "
        "the console sends it with tasks/update"
    )
    created_at: datetime
    server: str
    method: str
    params: Any
    run_title: str
    owner: str
    answer_url: str
    policy: PolicyOut
    content_digest: str | None = Field(
        default=None,
        description="N-of-M: the digest of the answer the first approver gave; co-signers sign it",
    )
    approvals: int = Field(
        description="accepts so far (N-of-M); the question is accepted at policy.required_approvals"
    )
    signatures: list[SignatureOut]

    @classmethod
    def of(cls, view: QuestionView, *, base_url: str) -> QuestionOut:
        e = view.elicitation
        return cls(
            id=e.id,
            call_id=e.call_id,
            key=e.key,
            kind=kind_of(e.mode),
            mode=e.mode,  # type: ignore[arg-type]  # stored as one of its Literal's values
            message=e.message,
            requested_schema=json.loads(e.schema_json) if e.schema_json else None,
            url=e.url,
            digest=e.digest,
            status=e.status,
            content=json.loads(e.content_json) if e.content_json else None,
            decided_by=view.decided_by,
            decided_where=view.decided_where,
            decided_at=e.decided_at,
            expires_at=e.expires_at,
            live=view.live,
            task=view.task,
            created_at=e.created_at,
            server=view.server,
            method=view.method,
            params=json.loads(view.params_json),
            run_title=view.run_title,
            owner=view.owner,
            answer_url=f"{base_url}/elicitations/{e.id}",
            policy=PolicyOut(
                answerers=e.answerers,  # type: ignore[arg-type]  # stored as one of ANSWERERS
                no_self_approval=e.no_self_approval,
                required_approvals=e.required_approvals,
                step_up_minutes=e.step_up_minutes,
                expiry_action=e.expiry_action,  # type: ignore[arg-type]  # stored as cancel|decline
                set_by=[str(a.get("from")) for a in view.policy.get("applied", [])],
                raised_by=(view.policy.get("raised_by_edit") or {}).get("from"),
            ),
            content_digest=e.content_digest,
            approvals=view.approvals,
            signatures=[SignatureOut(user=s.user, action=s.action, at=s.at) for s in view.signatures],
        )


class QuestionPage(BaseModel):
    items: list[QuestionOut]
    next_before: str | None = Field(description="pass as ?before= to get the next (older) page")


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = Field(
        default=None,
        description='a form\'s answer; a gate: {"arguments": {…}} approves changed arguments (if allowed)',
    )
    reason: str | None = Field(
        default=None, max_length=1000, description="a gate's decline: why (the agent and its model are told)"
    )
    digest: str | None = Field(default=None, description="digest of the question as shown; 409 if it changed")
    content_digest: str | None = Field(
        default=None,
        description="co-signing (N-of-M): the content_digest of the answer the first approver gave",
    )


class ServerOut(BaseModel):
    name: str
    transport: Literal["stdio", "http"]
    where: str = Field(description="an HTTP server's address; empty for a stdio server")
    protocol: str = Field(
        description='the MCP version the server spoke when the console last reached it ("2026-07-28", '
        '"2025-11-25", ...); "unknown" until the console has reached it'
    )
    pinned_protocol: Literal["2025-11-25", "2026-07-28"] | None = Field(
        default=None,
        description="the one MCP version the console speaks to it, as a team admin pinned it; null: the "
        "newest both speak",
    )


class ServerPinIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    protocol_version: Literal["2025-11-25", "2026-07-28"] | None = Field(
        description="the one MCP version the console speaks to the server (2025-11-25 for a server that "
        "pushes questions only on the older protocol); null: the newest both speak"
    )


class ToolOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
