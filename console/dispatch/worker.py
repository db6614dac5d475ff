"""The dispatcher: claims due jobs with a lease, sends without holding a transaction, records the outcome."""

from __future__ import annotations

import json
import logging
import os
import secrets
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from functools import partial

import anyio
from anyio.abc import TaskGroup
from sqlalchemy import ColumnElement, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.attestation import APPROVAL_META, Attester
from console.audit import SYSTEM, record_event
from console.background import Health, is_database_error, keep_going, wait_after
from console.calls.connects.parking import may_ask_to_connect, open_connect
from console.calls.declared import declared
from console.calls.endpoints import CredentialMissing, endpoint_for_owner, on_agents_session
from console.calls.links.required import requires_links
from console.calls.models import AgentRequest, Call, CallRound, DispatchJob, Elicitation, Run
from console.calls.moves import job_may_become, move_job, round_may_become
from console.calls.questions.agent_answers import expire_agent_requests, overdue_agent_requests
from console.calls.questions.decisions import expire_due, overdue_questions, response_for
from console.calls.replies.at_once import COMPLETES_AT_ONCE, record_completed
from console.calls.replies.outcomes import (
    close_held,
    fail_call,
    record_error,
    record_links_required,
    record_reply,
)
from console.calls.replies.tasks import (
    TASK_JOBS,
    record_cancel_sent,
    record_task_reply,
    repeatable,
    task_request,
)
from console.calls.server_reports.logs import LogRecorder
from console.calls.server_reports.progress import ProgressRecorder
from console.calls.server_reports.reports import Reports
from console.calls.service import CallView, is_terminal, pending_questions, record_sent
from console.calls.states import CallStatus, JobKind, JobStatus, RoundStatus
from console.calls.tasks import CANCEL, POLL
from console.config import Settings
from console.db import finds_any, finds_any_of, get_row, utcnow
from console.dispatch.attesting import RoundQuestions, attestation_meta
from console.dispatch.held import HeldRequest
from console.dispatch.link_notices import AwaitedLinks
from console.dispatch.resending import record_lost_or_resend
from console.dispatch.signals import Signals
from console.errors import McpError, McpLost, McpUnavailable
from console.forms.arguments import call_argument_errors
from console.identity.credentials import SecretMissing
from console.identity.models import Team, User
from console.mcp.challenge import AuthorizationRequired
from console.mcp.endpoint import ELICITATION, LOG_LEVELS, Complete, Endpoint, McpRequest, Reply, Task
from console.mcp.models import McpServer
from console.mcp.pool import ConnectionPool
from console.mcp.roots import Root
from console.mcp.sealed import Outbound
from console.metrics import ANSWER_TO_RESUME, LEASE_EXPIRIES
from console.oauth.grants import holds_grant
from console.oauth.hints import SignInHint, sign_in_hint
from console.transactions import after_commit, rollback, transaction

logger = logging.getLogger(__name__)

CRASH_EXIT_CODE = 86
# A job sent again once with its owner's OAuth token refreshed, because the server refused the token.
REFRESHING = "the server refused the OAuth token; refreshing it"
SEND_LOST = "the console stopped after sending this request; the outcome is unknown — send again or abandon"
HELD_LOST = (
    "the console stopped while the server held this call open for a question it pushed; the server has "
    "given up on it, and what it did before is unknown — send again or abandon"
)


@dataclass(frozen=True)
class Claimed:
    job_id: str
    call_id: str
    kind: str  # the job's
    # A first send already recorded as being sent by this worker (dispatch.follow.start_call): no claim
    # and no preparing transaction.
    send: tuple[Endpoint, McpRequest, str] | None = None


# The rows a send is prepared from. The server's team rides along so its default roots need no query of
# their own (console/mcp/admin_roots.py), and the call, run and server so the audit events' context needs
# none either. Built once: it runs for every send.
_JOB_TO_PREPARE = (
    select(DispatchJob, Call, McpServer, Run, User.name, Team)
    .join(Call, Call.id == DispatchJob.call_id)
    .join(McpServer, McpServer.id == Call.server_id)
    .join(Run, Run.id == Call.run_id)
    .join(User, User.id == Run.owner_id)
    .join(Team, Team.id == McpServer.team_id)
    .where(DispatchJob.id == bindparam("job_id"))
)

# The rows a reply is recorded on, locked; the server row rides along so the audit event's context needs no
# query of its own. Built once: it runs for every send.
_JOB_TO_RECORD = (
    select(DispatchJob, Call, Run, McpServer)
    .join(Call, Call.id == DispatchJob.call_id)
    .join(Run, Run.id == Call.run_id)
    .join(McpServer, McpServer.id == Call.server_id)
    .where(DispatchJob.id == bindparam("job_id"))
    .with_for_update(of=[DispatchJob, Call])
)


class Dispatcher:
    """Sends every queued request exactly once (or marks it interrupted when a crash hides the outcome)."""

    def __init__(
        self,
        *,
        factory: async_sessionmaker[AsyncSession],
        pool: ConnectionPool,
        settings: Settings,
        signals: Signals,
        attester: Attester | None,
        concurrency: int = 8,
        health: Health | None = None,
    ) -> None:
        """`attester` signs the sends people approved (None: they go unsigned); `health` hears when a
        database error keeps the claimer or the housekeeper waiting."""
        self._factory = factory
        self._pool = pool
        self._settings = settings
        self._signals = signals
        self.worker_id = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._outbound = Outbound.of(settings)
        self._attester = attester
        self._slots = anyio.Semaphore(concurrency)
        self._tasks: TaskGroup | None = None
        self._health = health or Health()
        self._awaited_links = AwaitedLinks(factory, signals)

    async def run(self) -> None:
        """Work until cancelled: a claimer starting one task per claimed job, plus a housekeeper; each
        waits out database errors (console/background.py) while the sends already out go on."""
        self._pool.link_done = self._awaited_links.done
        kept = partial(keep_going, health=self._health, factory=self._factory)
        async with anyio.create_task_group() as tg:
            self._tasks = tg
            try:
                tg.start_soon(partial(kept, "dispatcher's housekeeping", self._housekeep))
                await kept("dispatcher's claimer", partial(self._claimer, tg))
            finally:
                self._tasks = None

    @property
    def accepting(self) -> bool:
        """Whether `hand_over` can take a job now (the dispatcher runs in this process)."""
        return self._tasks is not None

    def hand_over(self, claimed: Claimed) -> None:
        """Send a job that was recorded as being sent by this worker, without a claim query.

        It takes no sending slot: its record already says it is going out, and waiting for a slot could
        outlast its lease, after which the call is interrupted and must not be sent. (The slots bound what
        the claimer takes from the queue; handed-over sends are bounded by the requests that made them.)
        If the dispatcher stopped meanwhile, the job's lease runs out and the call is interrupted, as
        after a crash: whether it reached the server is not known.
        """
        if self._tasks is None:
            return
        self._fault("crash_after_claim")
        self._tasks.start_soon(self._drive_and_signal, claimed)

    async def _claimer(self, tg: TaskGroup) -> None:
        # A single task polls the database, and only while a sending slot is free, so an idle console
        # costs one small query per poll interval and a busy one never claims more than it can send.
        while True:
            await self._slots.acquire()
            # A wake-up that arrives while the claim query runs must not be lost for a whole poll.
            marker = self._signals.work_marker()
            try:
                claimed = await self._claim()
            except BaseException:
                self._slots.release()
                raise
            if claimed is None:
                self._slots.release()
                await self._signals.wait_for_work(self._settings.dispatch_poll_seconds, since=marker)
                continue
            self._fault("crash_after_claim")
            tg.start_soon(self._drive_in_slot, claimed)

    async def _drive_in_slot(self, claimed: Claimed) -> None:
        try:
            await self._drive_and_signal(claimed)
        finally:
            self._slots.release()

    async def _housekeep(self) -> None:
        while True:
            await self.housekeep_once()
            await anyio.sleep(self._settings.dispatch_poll_seconds)
            if self._settings.env == "test" and self._settings.test_fault == "housekeeping_fails":
                raise RuntimeError("test fault housekeeping_fails")  # a bug no loop can step over

    async def housekeep_once(self) -> None:
        """Expire overdue questions and turn jobs whose sender died after sending into interrupted calls."""
        with anyio.CancelScope(shield=True):
            now = utcnow()
            async with transaction(self._factory) as session:  # most passes: one read finds nothing to do
                if not await finds_any_of(
                    session, overdue_questions(now), overdue_agent_requests(now), _lost_sends(now)
                ):
                    return
            async with transaction(self._factory) as session:
                expired = await expire_due(session=session)
            async with transaction(self._factory) as session:
                unanswered = await expire_agent_requests(session=session)
            async with transaction(self._factory) as session:
                lost = await _recover_lost_sends(session, self._settings)
        for call_id in {*expired, *unanswered, *lost}:
            self._signals.call_changed(call_id)
        if expired:
            self._signals.work_available()

    async def _drive_and_signal(self, claimed: Claimed) -> None:
        ended: CallView | None = None
        try:
            ended = await self._drive(claimed)
        except Exception as error:
            if not is_database_error(error):
                raise
            # Claimed and not sent, the job is claimed again once its lease runs out; sent and not
            # recorded, its call is interrupted then (`_recover_lost_sends`): nothing is sent twice.
            logger.error(
                "call %s: database error; its job is left to its lease: %s",
                claimed.call_id,
                error,
                extra={"call_id": claimed.call_id},
            )
        finally:
            self._signals.call_changed(claimed.call_id, ended=ended)

    async def _claim(self) -> Claimed | None:
        # Database steps are shielded: a cancellation in the middle of a SQLite transaction would leave
        # a connection holding the write lock while it is torn down.
        with anyio.CancelScope(shield=True):
            claimed = await self._claim_unshielded()
        return claimed

    async def _claim_unshielded(self) -> Claimed | None:
        now = utcnow()
        due = or_(
            (DispatchJob.status == JobStatus.READY) & (DispatchJob.not_before <= now),
            (DispatchJob.status == JobStatus.CLAIMED) & (DispatchJob.lease_until < now),
        )
        async with transaction(self._factory) as session:
            if not await finds_any(session, due):
                return None
            candidate = (
                await session.execute(
                    select(DispatchJob.id, DispatchJob.call_id, DispatchJob.kind, DispatchJob.status)
                    .where(due)
                    .order_by(DispatchJob.not_before)
                    .limit(1)
                    .with_for_update(skip_locked=True)
                )
            ).one_or_none()
            if candidate is None:
                return None  # nothing written: the commit ends the read
            taken = await session.execute(
                update(DispatchJob)
                .where(DispatchJob.id == candidate.id, due, job_may_become(JobStatus.CLAIMED))
                .values(
                    status=JobStatus.CLAIMED,
                    claimed_by=self.worker_id,
                    attempts=DispatchJob.attempts + 1,
                    lease_until=now + timedelta(seconds=self._settings.lease_seconds),
                )
            )
            if taken.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
                return None
        if candidate.status == JobStatus.CLAIMED:  # its claimer's lease ran out before it sent anything
            LEASE_EXPIRIES.inc()
        return Claimed(candidate.id, candidate.call_id, candidate.kind)

    def _followed(
        self, request: McpRequest, reports: Reports, held: HeldRequest, followed_level: str | None
    ) -> McpRequest:
        """The request with what an older server pushes going to `held`, and the server's progress and
        logs kept on the call and going to whoever in this process follows it. Followers of progress are
        looked up as it arrives; of logs when the request goes out (`followed_level`), so a follower that
        registered later (the gateway does so as soon as the call is started) hears no logs."""
        levels = [level for level in (followed_level, reports.logs.level) if level is not None]
        level = min(levels, key=LOG_LEVELS.index) if levels else None
        return replace(
            request,
            on_progress=reports.progress,
            on_pushed=held,
            log_level=level,
            on_log=reports.logs if level is not None else None,
            wait_for_logs=followed_level is not None,
        )

    async def _drive(self, claimed: Claimed) -> CallView | None:
        """Send the job and record the reply; the call as that left it when it ended."""
        prepared = claimed.send
        if prepared is None:
            try:
                with anyio.CancelScope(shield=True):
                    async with transaction(self._factory) as session:
                        prepared = await self._prepare(session, claimed)
            except Exception as error:
                if not is_database_error(error):
                    raise
                await self._release_when_possible(claimed, error)
                return None
        if prepared is None:
            return None
        endpoint, request, server = prepared
        reports = self._reports(claimed)
        held = HeldRequest(
            self._factory,
            self._settings,
            self._signals,
            self.worker_id,
            claimed.job_id,
            claimed.call_id,
            server,
            reports,
        )
        request = self._followed(request, reports, held, self._signals.log_level_of(claimed.call_id))
        # The lease is renewed until the reply is recorded, which may wait for the database to be back.
        async with anyio.create_task_group() as beating:
            beating.start_soon(self._heartbeat, claimed.job_id)
            try:
                reply: Reply | McpError = await self._pool.send(endpoint, request)
            except McpError as exc:
                reply = exc
            self._fault("crash_after_send")
            protocol = self._pool.protocol(endpoint)
            ended = await self._record_when_possible(
                claimed, reply, server, protocol, endpoint.roots, reports
            )
            if isinstance(reply, McpError) and requires_links(reply):
                self._awaited_links.expect(endpoint, reply, claimed.call_id)
            beating.cancel_scope.cancel()
        return ended

    async def _record_when_possible(
        self,
        claimed: Claimed,
        reply: Reply | McpError,
        server: str,
        protocol: str | None,
        roots: tuple[Root, ...],
        reports: Reports,
    ) -> CallView | None:
        """`_record`, tried again after database errors for up to CONSOLE_DATABASE_RETRY_SECONDS: a reply
        the server sent while the database was unreachable is recorded once it is back. Past that the
        error is raised, and the call is interrupted when the job's lease runs out."""
        deadline = anyio.current_time() + self._settings.database_retry_seconds
        failures = 0
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    hint = (
                        await self._sign_in_hint(claimed.call_id, reply)
                        if isinstance(reply, AuthorizationRequired)
                        else None
                    )
                    async with transaction(self._factory) as session:
                        return await self._record(
                            session, claimed, reply, server, protocol, roots, reports, hint
                        )
            except Exception as error:
                failures += 1
                if not is_database_error(error) or anyio.current_time() >= deadline:
                    raise
                logger.warning(
                    "call %s: the reply is not recorded yet (%s); trying again",
                    claimed.call_id,
                    error,
                    extra={"call_id": claimed.call_id},
                )
            await anyio.sleep(wait_after(failures))

    async def _release_when_possible(self, claimed: Claimed, error: Exception) -> None:
        """A claimed job that a database error kept from being prepared went nowhere: it is queued again
        (tried for up to CONSOLE_DATABASE_RETRY_SECONDS) rather than waiting out its lease, and never
        counts as possibly sent."""
        logger.warning(
            "call %s: not sent, the database failed while preparing it (%s); queued again",
            claimed.call_id,
            error,
            extra={"call_id": claimed.call_id},
        )
        deadline = anyio.current_time() + self._settings.database_retry_seconds
        failures = 0
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    async with transaction(self._factory) as session:
                        await session.execute(
                            update(DispatchJob)
                            .where(
                                DispatchJob.id == claimed.job_id,
                                DispatchJob.status == JobStatus.CLAIMED,
                                DispatchJob.claimed_by == self.worker_id,
                                job_may_become(JobStatus.READY),
                            )
                            .values(
                                status=JobStatus.READY,
                                claimed_by=None,
                                lease_until=None,
                                attempts=DispatchJob.attempts - 1,
                            )
                        )
                self._signals.work_available()
                return
            except Exception as again:
                failures += 1
                if not is_database_error(again) or anyio.current_time() >= deadline:
                    raise  # the claim's lease runs out instead, and then the job is claimed again
            await anyio.sleep(wait_after(failures))

    async def _heartbeat(self, job_id: str) -> None:
        """Renew the lease of a job being sent, a third of a lease apart, until cancelled: while this
        process lives its sends stay its own, and once it dies another dispatcher learns of it within
        one lease (CONSOLE_LEASE_SECONDS)."""
        lease = timedelta(seconds=self._settings.lease_seconds)
        while True:
            await anyio.sleep(self._settings.lease_seconds / 3)
            self._fault("crash_while_sending")
            try:
                with anyio.CancelScope(shield=True):
                    async with transaction(self._factory) as session:
                        await session.execute(
                            update(DispatchJob)
                            .where(
                                DispatchJob.id == job_id,
                                DispatchJob.status == JobStatus.SENDING,
                                DispatchJob.claimed_by == self.worker_id,
                            )
                            .values(lease_until=utcnow() + lease)
                        )
            except Exception as error:
                if not is_database_error(error):
                    raise
                # The send goes on; a beat that cannot reach the database is tried again at the next.
                logger.warning("job %s: its lease was not renewed: %s", job_id, error)

    async def _sign_in_hint(self, call_id: str, refusal: AuthorizationRequired) -> SignInHint | None:
        """Where the call's owner would sign in to connect, found before the reply is recorded (no
        transaction is open while the authorization server is asked); None unless people connect."""
        async with self._factory() as session:
            server = (
                await session.execute(
                    select(McpServer).join(Call, Call.server_id == McpServer.id).where(Call.id == call_id)
                )
            ).scalar_one()
            session.expunge(server)
        if server.credential_mode != "oauth":
            return None
        return await sign_in_hint(server=server, outbound=self._outbound, challenge=refusal.challenge)

    def _reports(self, claimed: Claimed) -> Reports:
        call_id = claimed.call_id
        kept_level = self._settings.call_log_level
        return Reports(
            ProgressRecorder(self._factory, call_id, claimed.job_id, self._signals.progress_of(call_id)),
            LogRecorder(
                self._factory,
                call_id,
                self._signals.logs_of(call_id),
                None if kept_level == "off" else kept_level,
            ),
        )

    async def _prepare(
        self, session: AsyncSession, claimed: Claimed
    ) -> tuple[Endpoint, McpRequest, str] | None:
        job, call, server, run, owner, _team = (
            await session.execute(_JOB_TO_PREPARE, {"job_id": claimed.job_id})
        ).one()
        try:
            endpoint, request = await self._request_and_endpoint(session, job, call, server, run, owner)
        except (CredentialMissing, SecretMissing) as exc:
            await self._fail_unsendable(session, job, call, exc.message)
            return None
        refused = self._arguments_refused(endpoint, job, request)
        if refused is not None:
            await self._fail_unsendable(session, job, call, refused)
            return None
        # Renewed while the send is out (_heartbeat): it runs out only when this process is gone.
        lease = self._settings.lease_seconds
        sending = await session.execute(
            update(DispatchJob)
            .where(
                DispatchJob.id == job.id,
                DispatchJob.status == JobStatus.CLAIMED,
                DispatchJob.claimed_by == self.worker_id,
                job_may_become(JobStatus.SENDING),
            )
            .values(status=JobStatus.SENDING, lease_until=utcnow() + timedelta(seconds=lease))
        )
        if sending.rowcount != 1:  # type: ignore[attr-defined]  # CursorResult of an UPDATE
            await rollback(session)
            return None  # our lease ran out and another worker has it
        await _mark_sent(session, job, request)
        if job.kind == JobKind.RESUME:  # queued by the answer that completed the round
            ANSWER_TO_RESUME.observe((utcnow() - job.created_at).total_seconds())
        return endpoint, request, server.name

    def _arguments_refused(self, endpoint: Endpoint, job: DispatchJob, request: McpRequest) -> str | None:
        """Why a first send of a tool call must not go out: arguments the tool's inputSchema refuses, as
        its server last listed it (a call started while the server could not be asked was not checked)."""
        if job.kind != JobKind.INITIAL or request.method != "tools/call":
            return None
        listed = self._pool.known_tool(endpoint, str(request.params.get("name")))
        if listed is None:
            return None
        refused = call_argument_errors(listed.input_schema, request.params.get("arguments") or {})
        if not refused:
            return None
        problems = "; ".join(f"{field}: {problem}" for field, problem in refused.items())
        return f"the arguments do not match the tool's inputSchema, so the call was not sent ({problems})"

    async def take_resume(self, session: AsyncSession, job: DispatchJob) -> Claimed | None:
        """In the transaction of the answer that queued `job` (a resume), record it as being sent by this
        dispatcher, with its request prepared, for `hand_over` once that transaction commits: no claim,
        no transaction of its own. A crash before it reaches the server leaves the call interrupted, as
        for a new call this process took. None leaves it queued: this dispatcher is not running, or the
        owner's credential is missing (the claimer's path then fails the call with the reason).
        """
        if self._tasks is None:
            return None
        lease = timedelta(seconds=self._settings.lease_seconds)
        move_job(job, JobStatus.SENDING)
        job.claimed_by, job.attempts, job.lease_until = self.worker_id, 1, utcnow() + lease
        _job, call, server, run, owner, _team = (
            await session.execute(_JOB_TO_PREPARE, {"job_id": job.id})  # flushes the job first
        ).one()
        try:
            endpoint, request = await self._request_and_endpoint(session, job, call, server, run, owner)
        except (CredentialMissing, SecretMissing):
            move_job(job, JobStatus.READY)
            job.claimed_by, job.attempts, job.lease_until = None, 0, None
            return None
        await _mark_sent(session, job, request)
        return Claimed(job.id, job.call_id, job.kind, (endpoint, request, server.name))

    async def _request_and_endpoint(
        self, session: AsyncSession, job: DispatchJob, call: Call, server: McpServer, run: Run, owner: str
    ) -> tuple[Endpoint, McpRequest]:
        """What the job sends, attested when people decided it, and where, with the owner's credential.

        Raises:
            CredentialMissing, SecretMissing.
        """
        questions = None if job.round_id is None else RoundQuestions(session, job.round_id)
        request = await _request_for(session, job, call, questions)
        if call.task_id is None:  # the approval is attested on the call itself, not on a task's requests
            meta = await attestation_meta(
                session=session,
                attester=self._attester,
                settings=self._settings,
                call=call,
                server=server,
                requester=owner,
                params=request.params,
                questions=questions,
                kept=job.attestation,
            )
            request = replace(request, meta=meta)
        endpoint = await endpoint_for_owner(
            session=session,
            outbound=self._outbound,
            server=server,
            owner_id=run.owner_id,
            owner_name=owner,
            force_refresh=job.last_error == REFRESHING,
        )
        endpoint = await on_agents_session(
            session=session, call=call, owner_id=run.owner_id, endpoint=endpoint
        )
        if request.meta is not None:  # kept with the job's record of being sent, for every later send
            job.attestation = request.meta[APPROVAL_META]
        return endpoint, request

    async def _fail_unsendable(
        self, session: AsyncSession, job: DispatchJob, call: Call, reason: str
    ) -> None:
        """Nothing was sent and nothing can be: the call fails with the reason, the job is done."""
        move_job(job, JobStatus.DONE)
        job.lease_until = None
        fail_call(session=session, call=call, job=job, error={"message": reason})
        after_commit(
            session,
            partial(
                logger.warning,
                "call %s failed before it was sent: %s",
                call.id,
                reason,
                extra={"call_id": call.id},
            ),
        )

    async def _record(
        self,
        session: AsyncSession,
        claimed: Claimed,
        reply: Reply | McpError,
        server: str,
        protocol: str | None,
        roots: tuple[Root, ...],
        reports: Reports,
        hint: SignInHint | None,
    ) -> CallView | None:
        """Record the reply; the call as it left it when it ended or waits on its questions."""
        if isinstance(reply, Complete) and reports.none_arrived() and claimed.kind in COMPLETES_AT_ONCE:
            completed = await record_completed(
                session,
                job_id=claimed.job_id,
                kind=claimed.kind,
                call_id=claimed.call_id,
                worker_id=self.worker_id,
                result=reply.result,
                protocol=protocol,
            )
            if completed is not None:
                return completed
            await rollback(session)  # the send is recorded below, as the statements found it
        found = await session.execute(_JOB_TO_RECORD, {"job_id": claimed.job_id})
        job, call, run, server_row = found.one()
        if job.status != JobStatus.SENDING or job.claimed_by != self.worker_id:
            await rollback(session)
            return None  # the lease ran out first and the call was marked interrupted
        move_job(job, JobStatus.DONE)
        job.lease_until = None
        reports.keep(call)
        asked: list[Elicitation] | None = None  # known when the reply was a plain result or a round
        if job.kind == CANCEL:
            record_cancel_sent(session, call, reply)
        if is_terminal(call.status):  # abandoned while the server held it open: what it answered is moot
            return None
        if protocol is not None and server_row.protocol_version != protocol:
            server_row.protocol_version = protocol
        if isinstance(reply, AuthorizationRequired):
            await self._unauthorized(session, call, job, run, server_row, reply, hint)
        elif isinstance(reply, McpUnavailable) or (isinstance(reply, McpLost) and repeatable(call, job)):
            self._retry_or_fail(session, call, job, reply)
        elif isinstance(reply, McpLost):
            record_lost_or_resend(
                session=session,
                call=call,
                job=job,
                reason=f"{reply.message}; the outcome is unknown",
                idempotent=server_row.idempotent,
                settings=self._settings,
            )
        elif (
            isinstance(reply, McpError)
            and requires_links(reply)
            and job.kind != CANCEL
            and call.task_id is None
        ):
            asked = await record_links_required(
                session=session,
                call=call,
                run=run,
                job=job,
                error=reply,
                settings=self._settings,
                server=server,
            )
        elif isinstance(reply, McpError):
            await record_error(session=session, call=call, job=job, error=reply)
        elif isinstance(reply, Task) or call.task_id is not None:
            await record_task_reply(
                session=session,
                call=call,
                run=run,
                job=job,
                reply=reply,
                settings=self._settings,
                server=server,
                roots=roots,
            )
        else:
            asked = await record_reply(
                session=session,
                call=call,
                run=run,
                job=job,
                reply=reply,
                settings=self._settings,
                server=server,
                roots=roots,
            )
        if is_terminal(call.status) and call.round > 0:  # only a round can be held: none, nothing to close
            await close_held(session=session, call_id=call.id, reason=f"the call was {call.status}")
        # A resume, a restart or a state-only retry was queued, or a task's next poll.
        if call.status == CallStatus.RESUMING or (
            call.task_id is not None and call.status == CallStatus.RUNNING
        ):
            after_commit(session, self._signals.work_available)
        if is_terminal(call.status):
            return CallView(call, server_row.name, run.owner_id, run.team_id, [])
        if (
            call.status == CallStatus.AWAITING_INPUT and asked is not None
        ):  # earlier rounds' were all answered
            return CallView(call, server_row.name, run.owner_id, run.team_id, pending_questions(asked))
        return None

    async def _unauthorized(
        self,
        session: AsyncSession,
        call: Call,
        job: DispatchJob,
        run: Run,
        server: McpServer,
        refusal: AuthorizationRequired,
        hint: SignInHint | None,
    ) -> None:
        """The server refused the owner's token (or its absence); nothing was served. A refused token
        that can be refreshed is, once, and the request sent again; otherwise the call waits for its
        owner to connect their account (a connect question), or fails with the server's challenge when
        it cannot wait (a team account, a cancel, a server that keeps refusing)."""
        challenge, owner_id = refusal.challenge, run.owner_id
        if (
            challenge.status == 401
            and job.last_error != REFRESHING
            and (
                server.team_grant is not None
                if server.credential_mode == "oauth_team"
                else await holds_grant(session=session, user_id=owner_id, server_id=server.id)
            )
        ):
            move_job(job, JobStatus.READY)
            job.claimed_by, job.last_error, job.not_before = None, REFRESHING, utcnow()
            return
        if hint is not None and job.kind != CANCEL and await may_ask_to_connect(session, call.id):
            await open_connect(
                session=session,
                call=call,
                run=run,
                job=job,
                server=server.name,
                challenge=challenge,
                hint=hint,
                settings=self._settings,
            )
            return
        if server.credential_mode == "oauth_team":
            message = f"server {server.name!r} refused the team account: a team admin must check its client"
        else:
            wants = "more scopes" if challenge.insufficient_scope else "the owner's authorization"
            message = f"server {server.name!r} wants {wants}: connect it on the Connections page"
        error = {
            "code": None,
            "message": message,
            "data": {"authorization": asdict(challenge)},
        }
        fail_call(session=session, call=call, job=job, error=error)

    def _retry_or_fail(
        self, session: AsyncSession, call: Call, job: DispatchJob, error: McpUnavailable | McpLost
    ) -> None:
        # Nothing reached the server, or the request is harmless to repeat (a task's poll), so sending
        # again is safe; back off while the server is down.
        if job.attempts < self._settings.dispatch_attempts:
            move_job(job, JobStatus.READY)
            job.claimed_by, job.last_error = None, error.message
            job.not_before = utcnow() + timedelta(seconds=min(2**job.attempts, 60))
            record_event(
                session=session,
                actor=SYSTEM,
                action="send_deferred",
                subject_type="call",
                subject_id=call.id,
                call_id=call.id,
                payload={"error": error.message, "attempt": job.attempts},
            )
            return
        fail_call(session=session, call=call, job=job, error=error.as_json())

    def _fault(self, point: str) -> None:
        if self._settings.env == "test" and self._settings.test_fault == point:
            logger.error("test fault %s: exiting", point)
            os._exit(CRASH_EXIT_CODE)


# Built once: it runs for every resume sent.
_ROUND_SENT = (
    update(CallRound)
    .where(CallRound.id == bindparam("round_id"), round_may_become(RoundStatus.SENT))
    .values(status=RoundStatus.SENT)
)


async def _mark_sent(session: AsyncSession, job: DispatchJob, request: McpRequest) -> None:
    """In the transaction that records the job as being sent: its round is sent, and the audit log says
    what went out."""
    if job.round_id is not None:
        await session.execute(_ROUND_SENT, {"round_id": job.round_id})
    if job.kind != POLL:  # a poll only reads; the task's changes are what the audit log keeps
        record_sent(session=session, job=job, responses=request.input_responses)


async def _request_for(
    session: AsyncSession, job: DispatchJob, call: Call, questions: RoundQuestions | None
) -> McpRequest:
    if call.task_id is not None and job.kind in TASK_JOBS:
        return replace(task_request(call.task_id, job.kind, None), relayed=declared(call))
    params = json.loads(call.sent_params_json)
    if job.kind != JobKind.RESUME or questions is None:
        return McpRequest(call.method, params, relayed=declared(call))
    asked_json, state_json = (await session.execute(_ROUND_SENT_BACK, {"round_id": questions.round_id})).one()
    responses = {q.key: response_for(q) for q, _by in await questions.with_deciders()}
    if _asks_agent(asked_json):
        relayed = await session.execute(_AGENT_RESPONSES, {"round_id": questions.round_id})
        responses.update({key: json.loads(response) for key, response in relayed if response is not None})
    if call.task_id is not None:  # a task's answers go in tasks/update
        return replace(task_request(call.task_id, job.kind, responses), relayed=declared(call))
    state = None if state_json is None else json.loads(state_json)
    return McpRequest(
        call.method, params, input_responses=responses or None, request_state=state, relayed=declared(call)
    )


# Built once, they run for every resume: only the columns a resume sends back, read as plain rows (the
# round and the agent's answers are not changed here, so no ORM objects are loaded for them).
_ROUND_SENT_BACK = select(CallRound.input_requests_json, CallRound.request_state_json).where(
    CallRound.id == bindparam("round_id")
)
_AGENT_RESPONSES = select(AgentRequest.key, AgentRequest.response_json).where(
    AgentRequest.round_id == bindparam("round_id")
)


def _asks_agent(input_requests_json: str) -> bool:
    """Whether the round may hold requests its agent answers: any but elicitations (most rounds ask
    only those, and then need no query for them)."""
    asked = json.loads(input_requests_json)
    return any(not isinstance(r, dict) or r.get("method") != ELICITATION for r in asked.values())


def _lost_sends(now: datetime) -> ColumnElement[bool]:
    """The jobs being sent whose sender's lease ran out by `now`."""
    return (DispatchJob.status == JobStatus.SENDING) & (DispatchJob.lease_until < now)


async def _recover_lost_sends(session: AsyncSession, settings: Settings) -> list[str]:
    expired = _lost_sends(utcnow())
    if not await finds_any(session, expired):
        return []
    stale = (
        (
            await session.execute(
                select(DispatchJob).where(expired).with_for_update(skip_locked=True).limit(100)
            )
        )
        .scalars()
        .all()
    )
    lost: list[str] = []
    for job in stale:
        call = await get_row(session, Call, job.call_id)
        if repeatable(call, job):  # a task's poll or answers: sent again, harmlessly
            move_job(job, JobStatus.READY)
            job.claimed_by, job.lease_until = None, None
            lost.append(call.id)
            continue
        held = call.status == CallStatus.AWAITING_INPUT  # only a held round waits while its request is out
        reason = HELD_LOST if held else SEND_LOST
        idempotent = (
            await session.execute(select(McpServer.idempotent).where(McpServer.id == call.server_id))
        ).scalar_one()
        lost.append(call.id)
        if record_lost_or_resend(
            session=session, call=call, job=job, reason=reason, idempotent=idempotent, settings=settings
        ):
            logger.warning("call %s sent again: %s", call.id, reason, extra={"call_id": call.id})
            continue
        logger.warning("call %s interrupted: %s", call.id, reason, extra={"call_id": call.id})
        await close_held(session=session, call_id=call.id, reason=HELD_LOST)
    LEASE_EXPIRIES.inc(len(stale))
    return lost
