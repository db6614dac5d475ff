"""Links a server requires first: its error -32042 (URLElicitationRequiredError, MCP 2025-11-25) becomes
link questions for the run's owner, and the request goes out again once they are done.

The server's `data.elicitations` lists URL-mode elicitations (`mode: "url"`, `elicitationId`, `url`,
`message`). Each becomes a question of mode "url" in a round of the console's own, under the same consent
gate and same-user rule as a link the server pushes; the refused request is parked (its outbox row, as a
connect parks it) and sent again as it was once every link is done: its owner says so, or the server
sends `notifications/elicitation/complete` for it (`pass_links`).
Everything in the error is untrusted: its shape, sizes and URLs are checked as any link's are.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM, Actor, record_event, redact_input_requests
from console.calls.connects.parking import park, parked_job, send_parked_again
from console.calls.models import Call, CallRound, DispatchJob, Elicitation, Run
from console.calls.moves import move_job
from console.calls.notices import announce
from console.calls.rounds.asking import request_digest, shown_digest
from console.calls.rounds.ended import end_at_console_round
from console.calls.rounds.input_requests import ELICIT, parse_input_requests
from console.calls.states import CallStatus, JobStatus, QuestionMode, QuestionStatus, RoundStatus
from console.calls.tasks import cancel_task_of
from console.config import Settings
from console.db import get_row, utcnow
from console.errors import McpError, McpProtocolError

URL_ELICITATION_REQUIRED = -32042
# The keys of a required-links round's questions; only such a round, behind a parked request, is one.
LINK_KEY_PREFIX = "required-link-"
MAX_LINKS = 5  # links one error may require
MAX_ELICITATION_ID_CHARS = 200
# Rounds of links per call: a server that still requires them after this many fails the call instead.
MAX_LINK_ROUNDS = 3


def requires_links(error: McpError) -> bool:
    """Whether the server answered with URLElicitationRequiredError (-32042)."""
    return error.rpc_code == URL_ELICITATION_REQUIRED


def required_link_ids(error: McpError) -> list[str]:
    """The elicitationIds a -32042 error names (at most MAX_LINKS, each a string of a sane length)."""
    data = error.data
    links = data.get("elicitations") if isinstance(data, dict) else None
    if not isinstance(links, list):
        return []
    ids = (link.get("elicitationId") if isinstance(link, dict) else None for link in links[:MAX_LINKS])
    return [i for i in ids if isinstance(i, str) and 0 < len(i) <= MAX_ELICITATION_ID_CHARS]


def required_links(error: McpError, settings: Settings) -> dict[str, Any]:
    """The links of a -32042 error as a round's inputRequests (each an elicitation/create in URL mode,
    keyed `required-link-<n>`).

    Raises:
        McpProtocolError: `data.elicitations` is missing, empty, too long or too large, or one of its
            entries is not a URL-mode elicitation with an elicitationId, a message and an http(s) URL.
    """
    data = error.data
    links = data.get("elicitations") if isinstance(data, dict) else None
    if not isinstance(links, list) or not links:
        raise McpProtocolError("the server required links (-32042) but its data.elicitations lists none")
    if len(links) > MAX_LINKS:
        raise McpProtocolError(
            f"the server required {len(links)} links (-32042); at most {MAX_LINKS} are shown"
        )
    requests: dict[str, Any] = {}
    for n, link in enumerate(links, start=1):
        where = f"data.elicitations[{n - 1}]"
        if not isinstance(link, dict) or link.get("mode") != "url":
            raise McpProtocolError(
                f"the server required links (-32042) but {where} is not a URL-mode elicitation"
            )
        elicitation_id = link.get("elicitationId")
        if not isinstance(elicitation_id, str) or not 0 < len(elicitation_id) <= MAX_ELICITATION_ID_CHARS:
            raise McpProtocolError(
                f"the server required links (-32042) but {where}.elicitationId is not valid"
            )
        params = {k: link[k] for k in ("mode", "elicitationId", "url", "message") if k in link}
        requests[f"{LINK_KEY_PREFIX}{n}"] = {"method": ELICIT, "params": params}
    if len(json.dumps(requests).encode()) > settings.max_input_requests_bytes:
        raise McpProtocolError(
            f"the server required links (-32042) larger than {settings.max_input_requests_bytes} bytes"
        )
    try:
        parse_input_requests(requests)  # a message, and a URL that is http(s), as for a pushed link
    except McpProtocolError as exc:
        raise McpProtocolError(f"the server required links (-32042) but {exc.message}") from None
    return requests


async def may_require_links(session: AsyncSession, call_id: str) -> bool:
    """Whether the call may wait for its owner's links once more."""
    rounds = await session.execute(
        select(func.count(func.distinct(Elicitation.round_id))).where(
            Elicitation.call_id == call_id,
            Elicitation.mode == QuestionMode.URL,
            Elicitation.key == f"{LINK_KEY_PREFIX}1",
        )
    )
    return int(rounds.scalar_one()) < MAX_LINK_ROUNDS


async def open_required_links(
    *,
    session: AsyncSession,
    call: Call,
    run: Run,
    job: DispatchJob,
    server: str,
    requests: dict[str, Any],
    settings: Settings,
) -> list[Elicitation]:
    """Park `job` (the refused request) and put the call behind a round asking its owner to open each
    link of `requests` (from `required_links`); the questions. The caller commits."""
    questions, _ = parse_input_requests(requests)
    call.round += 1
    round_ = CallRound(
        call_id=call.id, n=call.round, input_requests_json=json.dumps(requests), status=RoundStatus.OPEN
    )
    session.add(round_)
    await session.flush()
    now = utcnow()
    params = json.loads(call.sent_params_json)
    rows = [
        Elicitation(
            round_id=round_.id,
            call_id=call.id,
            team_id=run.team_id,
            owner_id=run.owner_id,
            key=q.key,
            mode=QuestionMode.URL,
            message=q.message,
            url=q.url,
            request_digest=request_digest(q.request),
            digest=shown_digest(
                server=server,
                method=call.method,
                params=params,
                round_n=round_.n,
                key=q.key,
                request=q.request,
            ),
            status=QuestionStatus.PENDING,
            answerers="owner",
            policy_json=json.dumps({"applied": [], "destructive": False}),
            expires_at=now + timedelta(seconds=settings.elicitation_ttl_seconds),
        )
        for q in questions
    ]
    session.add_all(rows)
    park(job, call, now)
    await session.flush()
    await announce(session=session, settings=settings, call=call, server=server, questions=rows)
    record_event(
        session=session,
        actor=SYSTEM,
        action="links_required",
        subject_type="round",
        subject_id=round_.id,
        call_id=call.id,
        payload={
            "round": round_.n,
            "job": job.kind,
            "input_requests": redact_input_requests(requests),  # a link is its owner's alone
        },
    )
    return rows


async def parked_for_links(session: AsyncSession, round_: CallRound) -> DispatchJob | None:
    """The request parked behind `round_`, when it is a round of links the server required."""
    if LINK_KEY_PREFIX not in round_.input_requests_json:  # most rounds: no query
        return None
    return await parked_job(session, round_.call_id)


async def pass_links(*, session: AsyncSession, round_: CallRound, parked: DispatchJob, actor: Actor) -> bool:
    """Apply the decided round of required links (locked, just marked ready): every link done sends the
    parked request again, a new round for the server; any other answer ends the call. True when the
    request was queued again. The caller commits."""
    call = await get_row(session, Call, round_.call_id)
    links = (
        (await session.execute(select(Elicitation).where(Elicitation.round_id == round_.id))).scalars().all()
    )
    now = utcnow()
    if all(link.status == QuestionStatus.ACCEPTED for link in links):
        send_parked_again(parked, call, round_, now)
        record_event(
            session=session,
            actor=actor,
            action="request_retried",
            subject_type="call",
            subject_id=call.id,
            call_id=call.id,
            payload={"round": round_.n, "job": parked.kind, "reason": "the server required links, now done"},
        )
        return True
    move_job(parked, JobStatus.DONE)
    undone = next(link for link in links if link.status != QuestionStatus.ACCEPTED)
    declined = undone.status == QuestionStatus.DECLINED or (
        undone.status == QuestionStatus.EXPIRED and undone.expiry_action == "decline"
    )
    status = CallStatus.DECLINED if declined else CallStatus.CANCELLED
    if undone.status == QuestionStatus.EXPIRED:
        message = f"A link the server required was not opened in time, so the call was {status}."
    else:
        said = "declined" if undone.status == QuestionStatus.DECLINED else "cancelled"
        message = (
            f"A link the server required was not completed (its owner {said}), so the call was {status}."
        )
    error = {"message": message, "reason": undone.status}
    end_at_console_round(session=session, call=call, round_=round_, status=status, error=error, actor=actor)
    await cancel_task_of(session=session, call_id=call.id)
    return False
