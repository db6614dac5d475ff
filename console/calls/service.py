"""Starting runs and calls, and reading them back as the agent API shows them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

import anyio
from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from console.attestation import AttestationRefused, unverified_claims
from console.audit import SYSTEM, Actor, record_event, record_refusal
from console.audit.chain import EventContext, knows_context
from console.calls.access import refuse_read_only
from console.calls.connects.parking import PARKED
from console.calls.declared import declared, policy_for
from console.calls.endpoints import CredentialMissing, endpoint_for_owner, on_agents_session
from console.calls.gates.opening import open_gate, waiting_at_gate
from console.calls.models import METHODS, Call, DispatchJob, Elicitation, Run, params_target
from console.calls.moves import job_may_become, may_become, move_job, question_may_become
from console.calls.notices import call_ended_by_id
from console.calls.rawjson import member_text
from console.calls.states import TERMINAL, CallStatus, JobKind, JobStatus, QuestionStatus
from console.calls.tasks import cancel_task_of
from console.calls.wellformed import parse_json
from console.config import Settings
from console.db import insert_rows, new_id, reads_without_begin, utcnow
from console.errors import (
    Conflict,
    ConsoleError,
    Forbidden,
    InvalidInput,
    McpError,
    NotFound,
    PayloadTooLarge,
)
from console.forms.arguments import call_argument_errors
from console.identity import Principal, Viewer
from console.identity.credentials import SecretMissing
from console.identity.idempotency import Keyed
from console.identity.models import ApiToken, Team
from console.identity.viewer import OUTSIDER
from console.mcp.connection import ListedTool
from console.mcp.endpoint import ROOTS, Endpoint, McpRequest
from console.mcp.models import McpServer
from console.mcp.pool import ConnectionPool
from console.mcp.registry import enabled_server
from console.mcp.sealed import Outbound
from console.notify.channels import MAX_URL as MAX_CALLBACK_URL
from console.notify.channels import url_problem
from console.transactions import end_read

RESERVED_PARAMS = ("inputResponses", "requestState", "_meta")
ABANDONABLE = (CallStatus.AWAITING_INPUT, CallStatus.INTERRUPTED)
TASK_RUNNING = (Call.status == CallStatus.RUNNING) & Call.task_id.is_not(None)  # a task its server works on
NAME_KEY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


# The run with its team's server of the name the call gives (None when there is none). The server's team
# rides along so the server's default roots need no query of their own (console/mcp/admin_roots.py).
# Built once: it runs for every call.
_RUN_AND_SERVER = (
    select(Run, McpServer, Team)
    .outerjoin(McpServer, (McpServer.team_id == Run.team_id) & (McpServer.name == bindparam("server")))
    .outerjoin(Team, Team.id == McpServer.team_id)
    .where(Run.id == bindparam("run_id"))
)


@dataclass(frozen=True)
class PendingQuestion:
    id: str
    key: str
    mode: str
    message: str


@dataclass(frozen=True)
class StartedCall:
    call: Call
    job_id: str | None  # its first send; None while the call waits at its gate
    # With `claimed_by`: the first send, already recorded as being sent, for that dispatcher to send.
    send: tuple[Endpoint, McpRequest, str] | None = None  # ... and the server's name


@dataclass(frozen=True)
class CallView:
    call: Call
    server: str
    owner_id: str
    team_id: str
    pending: list[PendingQuestion]


async def create_run(
    *,
    session: AsyncSession,
    principal: Principal,
    team: str,
    title: str,
    agent: str,
    idempotency: Keyed | None = None,
) -> Run:
    """A run owned by the caller, in the caller's team (with its idempotency key, if the request has one),
    in the caller's transaction.

    Raises:
        Forbidden: the token belongs to another team, or its user is an auditor there.
    """
    if team != principal.team_name:
        raise Forbidden(f"this token acts in team {principal.team_name!r}, not {team!r}")
    run = await open_run(session=session, principal=principal, title=title, agent=agent)
    if idempotency is not None:
        idempotency.remember(session, "run", run.id)
    return run


async def run_of(*, session: AsyncSession, principal: Principal, run_id: str) -> Run:
    """A run of the caller's team.

    Raises:
        NotFound: no such run in the team.
    """
    run = await session.get(Run, run_id)
    await end_read(session)  # on SQLite an open transaction holds the write lock
    if run is None or run.team_id != principal.team_id:
        raise NotFound(f"no run {run_id!r}")
    return run


async def open_run(
    *,
    session: AsyncSession,
    principal: Principal,
    title: str,
    agent: str,
    gateway_key: str | None = None,
) -> Run:
    """Add a run of the caller's in their team, with its `run_created` event, to the caller's transaction.

    Raises:
        Forbidden: the caller is read-only in the team (recorded).  IntegrityError: `gateway_key` is taken.
    """
    await refuse_read_only(
        session=session,
        viewer=principal.viewer,
        team_id=principal.team_id,
        attempt="create_run",
        subject_type="team",
        subject_id=principal.team_id,
    )
    run = Run(
        team_id=principal.team_id,
        owner_id=principal.user_id,
        title=title,
        agent=agent,
        gateway_key=gateway_key,
    )
    session.add(run)
    await session.flush()
    payload = {"title": title, "agent": agent} | ({} if gateway_key is None else {"source": "mcp gateway"})
    record_event(
        session=session,
        actor=principal.actor,
        action="run_created",
        subject_type="run",
        subject_id=run.id,
        payload=payload,
    )
    return run


@dataclass(frozen=True)
class CheckedCall:
    """A call an agent asked for, checked and not recorded yet (`check_call`), with where it goes."""

    run: Run
    server: McpServer
    endpoint: Endpoint
    method: str
    params_text: str  # the agent's `params` member, byte for byte
    params: dict[str, Any]
    callback_url: str | None

    @property
    def tool(self) -> str | None:
        """The tool a tools/call calls: its arguments must fit the inputSchema the server lists."""
        return str(self.params["name"]) if self.method == "tools/call" else None


async def check_call(
    *, session: AsyncSession, principal: Principal, settings: Settings, run_id: str, body_text: str
) -> CheckedCall:
    """The first step of starting a call (`dispatch.follow.start_call` runs the steps): the agent's body,
    its run and server, whether the caller may call there, the callback URL, and the endpoint the call goes
    to (an OAuth server's token is refreshed in the caller's transaction). `body_text` is the agent's JSON
    body.

    Raises:
        PayloadTooLarge, InvalidInput, NotFound (run or server), Forbidden (an auditor, or not the run's
        owner); a refusal keeps only its record.
    """
    if len(body_text.encode()) > settings.max_params_bytes:
        raise PayloadTooLarge(f"call body is larger than {settings.max_params_bytes} bytes")
    server_name, method, params_text, params, callback_url = _parse_call_body(body_text)
    found = (await session.execute(_RUN_AND_SERVER, {"run_id": run_id, "server": server_name})).one_or_none()
    if found is None:
        raise NotFound(f"no run {run_id!r}")
    run, named_server, _server_team = found  # the team stays referenced: the session keeps it meanwhile
    if run.team_id != principal.team_id:
        raise _refused_start(session, principal.viewer, run, OUTSIDER, NotFound(f"no run {run_id!r}"))
    await refuse_read_only(
        session=session,
        viewer=principal.viewer,
        team_id=run.team_id,
        attempt="start_call",
        subject_type="run",
        subject_id=run.id,
    )
    if run.owner_id != principal.user_id:
        reason = "only the run's owner can start calls in it"
        raise _refused_start(session, principal.viewer, run, reason, Forbidden(reason))
    if callback_url is not None:
        await _check_callback(session, principal, callback_url, settings)
    server = enabled_server(named_server, server_name)
    try:
        endpoint = await endpoint_for_owner(
            session=session,
            outbound=Outbound.of(settings),
            server=server,
            owner_id=run.owner_id,
            owner_name=principal.user_name,
        )
    except (CredentialMissing, SecretMissing) as exc:
        raise InvalidInput(exc.message, {"server": exc.message}) from None
    return CheckedCall(run, server, endpoint, method, params_text, params, callback_url)


async def record_call(
    *,
    session: AsyncSession,
    principal: Principal,
    settings: Settings,
    checked: CheckedCall,
    listed: ListedTool | None,
    claimed_by: str | None = None,
    relayed: frozenset[str] = frozenset(),
    idempotency: Keyed | None = None,
    gateway_session: str | None = None,
) -> StartedCall:
    """Record a checked call as `running` with its first send queued, in the caller's transaction; the
    request goes out after it commits. A tool call the team's policy gates is recorded awaiting its gate's
    approval instead, with nothing queued (console/calls/gates/opening.py).

    `listed` is the tool as its server lists it, if known: arguments its inputSchema refuses are refused
    before anything is recorded; without it the dispatcher checks them before the first send. With
    `claimed_by`, the send is recorded as being sent by that dispatcher, which is then handed the request
    in memory: a crash before it reaches the server leaves the call interrupted (a person sends it again
    or abandons it), never sent twice. `relayed` names the input requests the caller's agent answers
    itself (sampling, roots: the MCP gateway), `gateway_session` the agent's 2025-11-25 session when its
    client answers roots (console/calls/endpoints.on_agents_session). With `idempotency`, the request's
    key is kept with the call it made.

    Raises:
        InvalidInput: the arguments do not fit the tool's inputSchema.
    """
    run, server, method, params = checked.run, checked.server, checked.method, checked.params
    if listed is not None:
        refused = call_argument_errors(listed.input_schema, params.get("arguments") or {})
        if refused:
            raise InvalidInput(
                f"the arguments do not match the inputSchema of tool {params['name']!r}", refused
            )
    annotations = listed.annotations if listed is not None else None
    resolved = await policy_for(
        session=session,
        team_id=run.team_id,
        server_id=server.id,
        method=method,
        params=params,
        annotations=annotations,
    )
    gated = resolved if method == "tools/call" and resolved.policy.gate else None
    if gated is not None:
        twin = await waiting_at_gate(session, run.id, server.id, method, checked.params_text)
        if twin is not None:  # an agent's retry joins the call that waits: it is sent once, if approved
            record_event(
                session=session,
                actor=principal.actor,
                action="call_retried",
                subject_type="call",
                subject_id=twin.id,
                call_id=twin.id,
                payload={"server": server.name, "method": method},
            )
            if idempotency is not None:
                idempotency.remember(session, "call", twin.id)
            return StartedCall(twin, None)
    call = Call(
        id=new_id(),  # the audit event names it before the row is written
        run_id=run.id,
        server_id=server.id,
        method=method,
        params_json=checked.params_text,
        status=CallStatus.RUNNING,
        tool_annotations_json=None if annotations is None else json.dumps(annotations),
        relayed_json=json.dumps(sorted(relayed)) if relayed else None,
        gateway_session=gateway_session if ROOTS in relayed else None,
        people_sample=resolved.policy.sampling,
        callback_url=checked.callback_url,
        callback_token_id=principal.token_id if checked.callback_url is not None else None,
    )
    if gated is not None:
        session.add(call)
    else:  # the hot path: written below with its job, with plain statements, not the unit of work
        context = EventContext(team_id=run.team_id, server=server.name, tool=params_target(params))
        knows_context(session.sync_session, "call", call.id, context)
    if idempotency is not None:
        idempotency.remember(session, "call", call.id)
    record_started(session, principal.actor, call.id, server.name, method, params)
    if gated is not None:
        await open_gate(
            session=session,
            call=call,
            run=run,
            server=server.name,
            listed=listed,
            resolved=gated,
            settings=settings,
            actor=principal.actor,
        )
        return StartedCall(call, None)
    job = DispatchJob(id=new_id(), call_id=call.id, kind=JobKind.INITIAL, status=JobStatus.READY)
    if claimed_by is None:
        await insert_rows(session, call, job)
        return StartedCall(call, job.id)
    endpoint = await on_agents_session(
        session=session, call=call, owner_id=run.owner_id, endpoint=checked.endpoint
    )
    # The dispatcher renews the lease while the send is out; it runs out when this process is gone.
    move_job(job, JobStatus.SENDING)
    job.claimed_by, job.attempts = claimed_by, 1
    job.lease_until = utcnow() + timedelta(seconds=settings.lease_seconds)
    await insert_rows(session, call, job)
    record_sent(session=session, job=job, responses=None)
    request = McpRequest(method, params, relayed=declared(call))
    return StartedCall(call, job.id, (endpoint, request, server.name))


def record_started(
    session: AsyncSession, actor: Actor, call_id: str, server: str, method: str, params: dict[str, Any]
) -> None:
    """The `call_started` event of a call its agent made, in the transaction that records the call."""
    record_event(
        session=session,
        actor=actor,
        action="call_started",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"server": server, "method": method, "params": params},
    )


def record_sent(*, session: AsyncSession, job: DispatchJob, responses: dict[str, Any] | None) -> None:
    """The `request_sent` event of a job about to be sent, in the transaction that marks it sending; with
    the id of the approval attestation it carries, if any."""
    payload = {"kind": job.kind, "job": job.id, "attempt": job.attempts, "responses": responses}
    if job.attestation is not None:
        payload["attestation"] = _token_id(job.attestation)
    record_event(
        session=session,
        actor=SYSTEM,
        action="request_sent",
        subject_type="call",
        subject_id=job.call_id,
        call_id=job.call_id,
        payload=payload,
    )


async def listed_tool(pool: ConnectionPool, checked: CheckedCall, within: float) -> ListedTool | None:
    """The tool a checked tools/call calls, as its server lists it (None when the server cannot be asked
    now, or does not answer within `within` seconds besides the connect timeout). Asking may start the
    server: call it with no transaction open.

    Raises:
        NotFound: the server does not list the tool.
    """
    name = checked.tool
    if name is None:
        return None
    with anyio.move_on_after(within):
        try:
            tool = await pool.find_tool(checked.endpoint, name)
        except McpError:
            return None  # unreachable or misbehaving now: the dispatcher retries and reports on the call
        if tool is None:
            raise NotFound(f"server {checked.server.name!r} has no tool {name!r}")
        return tool
    return None  # too slow to answer within the agent's wait: the dispatcher checks before sending


async def _check_callback(session: AsyncSession, principal: Principal, url: str, settings: Settings) -> None:
    """Raises InvalidInput (`callback_url`) unless callbacks to `url` can be sent and signed."""
    problem = await url_problem(url, internal=settings.allow_private_server_urls)
    if problem is not None:
        raise InvalidInput("the callback URL cannot be used", {"callback_url": problem})
    token = await session.get(ApiToken, principal.token_id) if principal.token_id else None
    if token is None:
        raise InvalidInput("no callbacks here", {"callback_url": "only a call made with an API token"})
    if token.sealed_webhook_secret is None:
        raise InvalidInput(
            "no webhook secret",
            {
                "callback_url": "this token has no webhook secret to sign callbacks: give it one "
                "(the API tokens page, or `console tokens webhook-secret`)"
            },
        )


def _parse_call_body(body_text: str) -> tuple[str, str, str, dict[str, Any], str | None]:
    body = parse_json(body_text, "call")
    if not isinstance(body, dict):
        raise InvalidInput("invalid call", {"body": "must be a JSON object"})
    params_text = member_text(body_text, "params")
    errors: dict[str, str] = {}
    server, method, params = body.get("server"), body.get("method"), body.get("params")
    callback_url = body.get("callback_url")
    if not isinstance(server, str) or not server:
        errors["server"] = "is required"
    if callback_url is not None and (
        not isinstance(callback_url, str) or len(callback_url) > MAX_CALLBACK_URL
    ):
        errors["callback_url"] = f"an https URL of at most {MAX_CALLBACK_URL} characters"
    if method not in METHODS:
        errors["method"] = f"must be one of {', '.join(METHODS)}"
    if not isinstance(params, dict) or params_text is None:
        errors["params"] = "must be an object"
    elif isinstance(method, str) and method in NAME_KEY:
        errors.update(_check_params(method, params))
    if errors or params_text is None:
        raise InvalidInput("invalid call", errors)
    return str(server), str(method), params_text, cast(dict[str, Any], params), callback_url


def _check_params(method: str, params: dict[str, Any]) -> dict[str, str]:
    errors: dict[str, str] = {}
    key = NAME_KEY[method]
    if not isinstance(params.get(key), str) or not params[key]:
        errors[f"params.{key}"] = "is required"
    for reserved in RESERVED_PARAMS:
        if reserved in params:
            errors[f"params.{reserved}"] = "is set by the console, not by the agent"
    arguments = params.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        errors["params.arguments"] = "must be an object"
    elif method == "prompts/get" and arguments and not all(isinstance(v, str) for v in arguments.values()):
        errors["params.arguments"] = "prompt arguments must be strings"
    return errors


async def view_call(
    *, session: AsyncSession, viewer: Viewer, call_id: str, attempt: str = "view", own: bool = False
) -> CallView:
    """The call with its pending questions, if the caller may see it; with `own`, only if it is in a run
    of theirs (an agent following its own call: nobody else's agent follows it, whoever may look at it).

    Raises:
        NotFound: no such call in the caller's team, or not theirs with `own` (recorded as
            `access_refused`, named by `attempt`, when the call exists).
    """
    await reads_without_begin(session)
    row = (await session.execute(_CALL_TO_VIEW, {"call_id": call_id})).one_or_none()
    if row is None:
        raise NotFound(f"no call {call_id!r}")
    call, run, server_name = row
    hidden = _hidden_because(viewer, run, own=own)
    if hidden is not None:
        raise _refused_call(session, viewer, call.id, attempt, hidden, NotFound(f"no call {call_id!r}"))
    questions: list[PendingQuestion] = []
    if call.status == CallStatus.AWAITING_INPUT:  # the only state in which a call has pending questions
        pending = (await session.execute(_PENDING_OF_CALL, {"call_id": call.id})).scalars()
        questions = pending_questions(pending)
    await end_read(session)  # on SQLite an open transaction holds the write lock
    return CallView(call, server_name, run.owner_id, run.team_id, questions)


# Built once: they run for every look at a call, and building them cost about as much as running them.
_CALL_TO_VIEW = (
    select(Call, Run, McpServer.name)
    .join(Run, Run.id == Call.run_id)
    .join(McpServer, McpServer.id == Call.server_id)
    .where(Call.id == bindparam("call_id"))
    .execution_options(populate_existing=True)
)
_PENDING_OF_CALL = select(Elicitation).where(
    Elicitation.call_id == bindparam("call_id"), Elicitation.status == QuestionStatus.PENDING
)


def pending_questions(pending: Iterable[Elicitation]) -> list[PendingQuestion]:
    """A call's pending questions as its view shows them, in the order they were asked."""
    return [
        PendingQuestion(e.id, e.key, e.mode, e.message)
        for e in sorted(pending, key=lambda e: (e.created_at, e.key))
    ]


async def abandon_call(*, session: AsyncSession, viewer: Viewer, call_id: str) -> Call:
    """Stop driving a call that waits for input or was interrupted; its questions are withdrawn (in the
    caller's transaction).

    Raises:
        NotFound, Forbidden, Conflict: the call is running or already finished.
    """
    view = await view_call(session=session, viewer=viewer, call_id=call_id, attempt="abandon")
    await _ensure_can_steer(session, viewer, view, "abandon")
    error = {"message": f"abandoned by {viewer.user_name}"}
    if not await abandon_rows(session=session, call_id=call_id, actor=viewer.actor, error=error):
        raise Conflict(
            f"call is {view.call.status}; only waiting or interrupted calls, and tasks, can be abandoned"
        )
    return await _reload(session, call_id)


async def abandon_rows(
    *,
    session: AsyncSession,
    call_id: str,
    actor: Actor,
    error: dict[str, Any],
    payload: dict[str, Any] | None = None,
) -> bool:
    """End the call `abandoned` with `error` if it waits for input, was interrupted or is a task its server
    works on: its questions are withdrawn, a parked request is never sent, its task is cancelled, and the
    audit log says who (with `payload`). False when the call was in no such state. The caller commits."""
    now = utcnow()
    result = await session.execute(
        update(Call)
        .where(
            Call.id == call_id,
            Call.status.in_(ABANDONABLE) | TASK_RUNNING,
            may_become(CallStatus.ABANDONED),
        )
        .values(status=CallStatus.ABANDONED, updated_at=now, error_json=json.dumps(error))
    )
    if result.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        return False
    call_ended_by_id(session, call_id, "abandoned")
    await session.execute(
        update(Elicitation)
        .where(Elicitation.call_id == call_id, question_may_become(QuestionStatus.SUPERSEDED))
        .values(status=QuestionStatus.SUPERSEDED, decided_at=now)
    )
    await session.execute(  # a request parked while its owner connects is never sent now
        update(DispatchJob)
        .where(DispatchJob.call_id == call_id, DispatchJob.status == PARKED, job_may_become(JobStatus.DONE))
        .values(status=JobStatus.DONE)
    )
    await cancel_task_of(session=session, call_id=call_id)
    record_event(
        session=session,
        actor=actor,
        action="call_abandoned",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload=payload,
    )
    return True


async def resend_interrupted(
    *, session: AsyncSession, viewer: Viewer, call_id: str, now: datetime | None = None
) -> Call:
    """Send again the request whose outcome was lost when a console process died. A request people
    approved goes with the attestation it was first sent with (the same id, so its server can refuse a
    second use), and only until that expires: after that, only a new approval sends it. In the caller's
    transaction: wake the dispatcher once it commits.

    Raises:
        NotFound, Forbidden, Conflict: the call is not interrupted, or its approval expired.
    """
    view = await view_call(session=session, viewer=viewer, call_id=call_id, attempt="resend")
    await _ensure_can_steer(session, viewer, view, "resend")
    job = (
        await session.execute(
            select(DispatchJob).where(
                DispatchJob.call_id == call_id, DispatchJob.status == JobStatus.INTERRUPTED
            )
        )
    ).scalar_one_or_none()
    if job is None and view.call.status == CallStatus.INTERRUPTED:  # held after a restore, before its resume
        raise Conflict(
            "this call holds no request to send again (its answer came after the backup the database was "
            "restored from): abandon it, and make the call again if it is still wanted"
        )
    if job is not None and job.attestation is not None:
        _ensure_approval_holds(job.attestation, now or utcnow())
    result = await session.execute(
        update(Call)
        .where(Call.id == call_id, Call.status == CallStatus.INTERRUPTED, may_become(CallStatus.RESUMING))
        .values(status=CallStatus.RESUMING, updated_at=utcnow(), error_json=None)
    )
    if result.rowcount != 1 or job is None:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
        raise Conflict(f"call is {view.call.status}; only interrupted calls can be sent again")
    move_job(job, JobStatus.READY)
    job.not_before, job.lease_until, job.claimed_by = utcnow(), None, None
    record_event(
        session=session,
        actor=viewer.actor,
        action="call_resent",
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        payload={"job": job.id, "kind": job.kind, "attestation": _token_id(job.attestation)},
    )
    return await _reload(session, call_id)


def _ensure_approval_holds(attestation: str, now: datetime) -> None:
    """Raises Conflict once the attestation the request was first sent with has expired."""
    try:
        expires = unverified_claims(attestation).expires_at
    except AttestationRefused:
        expires = None
    if expires is None or expires <= now:
        when = "" if expires is None else f" at {expires.isoformat().replace('+00:00', 'Z')}"
        raise Conflict(
            f"the approval this call was sent with expired{when}, so it is not sent again: only a new "
            "approval sends it (make the call again)"
        )


def _token_id(attestation: str | None) -> str | None:
    if attestation is None:
        return None
    try:
        return unverified_claims(attestation).token_id
    except AttestationRefused:
        return None


async def _ensure_can_steer(session: AsyncSession, viewer: Viewer, view: CallView, attempt: str) -> None:
    await refuse_read_only(
        session=session,
        viewer=viewer,
        team_id=view.team_id,
        attempt=attempt,
        subject_type="call",
        subject_id=view.call.id,
        call_id=view.call.id,
    )
    if viewer.user_id != view.owner_id and not viewer.answers_forms_in(view.team_id):
        reason = "only the run's owner or an approver can steer this call"
        raise _refused_call(session, viewer, view.call.id, attempt, reason, Forbidden(reason))


def _refused_call(
    session: AsyncSession, viewer: Viewer, call_id: str, attempt: str, reason: str, error: ConsoleError
) -> ConsoleError:
    return record_refusal(
        session=session,
        error=error,
        actor=viewer.actor,
        subject_type="call",
        subject_id=call_id,
        call_id=call_id,
        attempt=attempt,
        reason=reason,
    )


def _refused_start(
    session: AsyncSession, viewer: Viewer, run: Run, reason: str, error: ConsoleError
) -> ConsoleError:
    return record_refusal(
        session=session,
        error=error,
        actor=viewer.actor,
        subject_type="run",
        subject_id=run.id,
        attempt="start_call",
        reason=reason,
    )


async def _reload(session: AsyncSession, call_id: str) -> Call:
    query = select(Call).where(Call.id == call_id).execution_options(populate_existing=True)
    return (await session.execute(query)).scalar_one()


def may_see_run(viewer: Viewer, run: Run) -> bool:
    return viewer.sees_run(run.team_id, run.owner_id)


def _hidden_because(viewer: Viewer, run: Run, *, own: bool) -> str | None:
    if viewer.role_in(run.team_id) is None:
        return OUTSIDER
    if not may_see_run(viewer, run):
        return "a member sees only their own runs"
    if own and run.owner_id != viewer.user_id:
        return "only the run's owner follows its calls from an agent"
    return None


def is_terminal(status: str) -> bool:
    return status in TERMINAL
