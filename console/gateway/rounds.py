"""What the agent's client takes while a call waits: the server's sampling and roots requests (the agent
has the model and the roots) and the questions its owner may decide alone, which people may answer too.
A 2026-07-28 agent gets them in an `input_required` result with the console's own sealed
`requestState` and answers on its retry; a 2025-11-25 session gets them pushed while its request is
held. For questions, the first answer, here or in the browser, decides."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from pydantic import ValidationError

from console.calls.models import AgentRequest
from console.calls.questions.agent_answers import answer_agent_request
from console.calls.questions.waiting import Waiting
from console.calls.states import QuestionMode
from console.calls.withdrawal import told_failed, withdraw_for_agent
from console.errors import ConsoleError, InvalidInput, NotFound
from console.gateway import input_responses, offers
from console.gateway.context import Context
from console.gateway.forwarding import Outcome, Services, Stop
from console.gateway.request_state import OfferedState, StateRefused
from console.identity import Principal
from console.transactions import transaction

logger = logging.getLogger(__name__)
Held = Callable[[Stop], Awaitable[Outcome]]


def bound_to(principal: Principal) -> str:
    return f"{principal.user_id}:{principal.token_id}"


def relayed_by(ctx: Context) -> frozenset[str]:
    """The input requests this agent's client declared it answers besides elicitation."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None:
        return frozenset()
    relayed = {"sampling/createMessage"} if capabilities.sampling is not None else set()
    if capabilities.roots is not None:
        relayed.add("roots/list")
    return frozenset(relayed)


async def with_offers(ctx: Context, services: Services, principal: Principal, held: Held) -> Outcome:
    """Run `held` (a hold on a call) so that what the client may answer goes to it.

    Raises:
        MCPError: the console refused an answer the 2025-11-25 client gave; the call was abandoned.
    """
    capabilities = ctx.session.client_capabilities
    if not ctx.session.can_send_request:  # 2026-07-28: hand them over in the result, at once

        def for_the_client(waiting: list[Waiting], asks: list[AgentRequest]) -> bool:
            return bool(asks) or any(offers.offerable(w, principal, capabilities) for w in waiting)

        return await held(for_the_client)
    pushed: set[str] = set()
    refusals: list[MCPError] = []
    async with anyio.create_task_group() as tasks:

        def push_new(waiting: list[Waiting], asks: list[AgentRequest]) -> bool:
            for ask in asks:
                if ask.id not in pushed:
                    pushed.add(ask.id)
                    tasks.start_soon(_push_ask, ctx, services, principal, ask, refusals)
            for question in waiting:
                if question.id not in pushed and offers.offerable(question, principal, capabilities):
                    pushed.add(question.id)
                    tasks.start_soon(_push_question, ctx, services, principal, question, refusals)
            return False

        outcome = await held(push_new)
        tasks.cancel_scope.cancel()  # decided elsewhere, or the call moved on: the client's prompt is moot
    if refusals:  # the session cannot be asked again for the same answer: its request fails, said why
        raise refusals[0]
    return outcome


async def _push_question(
    ctx: Context, services: Services, principal: Principal, waiting: Waiting, refusals: list[MCPError]
) -> None:
    question = offers.input_request(waiting)["params"]
    try:
        if waiting.mode == QuestionMode.URL:
            reply = await ctx.session.elicit_url(
                question["message"], question["url"], waiting.id, related_request_id=ctx.request_id
            )
        else:
            reply = await ctx.session.elicit_form(
                question["message"], question["requestedSchema"], related_request_id=ctx.request_id
            )
    except MCPError as exc:  # the client could not ask; people still can
        logger.info("gateway: the agent's client did not take question %s: %s", waiting.id, exc.message)
        return
    except ValidationError as exc:  # it answered with something that is no ElicitResult
        refusals.append(offers.malformed(exc))
        await end_refused(services, principal, waiting.question.call_id, refusals[-1])
        return
    response = reply.model_dump(by_alias=True, mode="json", exclude_none=True)
    try:
        await offers.apply_answer(
            services=services, principal=principal, question_id=waiting.id, response=response
        )
    except MCPError as refusal:
        refusals.append(refusal)
        await end_refused(services, principal, waiting.question.call_id, refusal)


async def _push_ask(
    ctx: Context, services: Services, principal: Principal, ask: AgentRequest, refusals: list[MCPError]
) -> None:
    """The server's sampling or roots request, sent to the agent's client as the server sent it."""
    params = json.loads(ask.params_json)
    try:
        if ask.method == "roots/list":
            reply: Any = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult)
        else:
            request = types.CreateMessageRequest(
                params=types.CreateMessageRequestParams.model_validate(params)
            )
            reply = await ctx.session.send_request(request, types.CreateMessageResult)
    except MCPError as exc:
        logger.info("gateway: the agent's client did not answer %s: %s", ask.method, exc.message)
        return
    except ValidationError as exc:  # not the result the request asks for
        refusals.append(offers.malformed(exc))
        await end_refused(services, principal, ask.call_id, refusals[-1])
        return
    try:
        await answer_ask(
            services, principal, ask.id, reply.model_dump(by_alias=True, mode="json", exclude_none=True)
        )
    except MCPError as refusal:
        refusals.append(refusal)
        await end_refused(services, principal, ask.call_id, refusal)


async def end_refused(services: Services, principal: Principal, call_id: str, refusal: MCPError) -> None:
    """The agent is told the console refused its answer, so its request fails: the console call is
    withdrawn now, with the refusal as its reason (`calls.withdrawal`), rather than wait on an answer
    nobody sends."""
    reason = told_failed(refusal.error.message)
    with anyio.CancelScope(shield=True):
        try:
            async with transaction(services.factory) as session:
                await withdraw_for_agent(session=session, principal=principal, call_id=call_id, reason=reason)
        except ConsoleError as exc:  # it ended meanwhile
            logger.info("gateway: call %s not abandoned after a refused answer: %s", call_id, exc.message)
            return
    services.signals.call_changed(call_id)
    services.signals.work_available()  # a request the console holds for its server ends now


async def answer_ask(
    services: Services, principal: Principal, request_id: str, response: Any, *, named: str = ""
) -> None:
    """The agent's answer to the server's sampling or roots request (one already answered is left alone).

    Raises:
        MCPError: the answer has the wrong shape for the request (its field named, under `named`).
    """
    try:
        async with transaction(services.factory) as session:
            answered = await answer_agent_request(
                session=session, viewer=principal.viewer, request_id=request_id, response=response
            )
    except InvalidInput as exc:
        raise offers.refused(named, exc.message, exc.fields or {"": exc.message}) from None
    except NotFound:
        return
    if answered:
        services.signals.work_available()


def handed_over(
    services: Services, principal: Principal, ctx: Context, outcome: Outcome
) -> dict[str, Any] | None:
    """The `input_required` result giving a 2026-07-28 client what it may answer, if anything."""
    if outcome.ended or ctx.session.can_send_request:
        return None
    capabilities = ctx.session.client_capabilities
    mine = [w for w in outcome.waiting if offers.offerable(w, principal, capabilities)]
    offered = offers.Offered.of(mine, outcome.asks)
    if not offered:
        return None
    expiries = [w.question.expires_at.timestamp() for w in mine] + [
        a.expires_at.timestamp() for a in outcome.asks
    ]
    state = OfferedState(
        outcome.view.call.id,
        {key: w.id for key, w in offered.questions.items()},
        min(max(expiries), time.time() + 86400),
        {key: a.id for key, a in offered.asks.items()},
    )
    return {
        "resultType": "input_required",
        "inputRequests": offered.input_requests(),
        "requestState": services.seal.seal(state, bound_to=bound_to(principal)),
    }


async def take_answers(services: Services, principal: Principal, request_state: str, responses: Any) -> str:
    """Apply a retry's answers (`inputResponses` as the agent sent them) to what its state names; the
    console call to hold again.

    Raises:
        MCPError: the state is not this console's for this caller, or expired; or the console refused an
            answer, or the answers are no object (the field named), and the call was abandoned.
    """
    try:
        state = services.seal.open(request_state, bound_to=bound_to(principal))
    except StateRefused as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc), {"reason": "invalid_request_state"}) from None
    try:
        given = input_responses.answers_in(responses)
        for key, request_id in state.requests.items():
            if key in given:
                await answer_ask(services, principal, request_id, given[key], named=f"inputResponses.{key}.")
        for key, question_id in state.questions.items():
            if key in given:  # one not answered this time is offered again if it still waits
                await offers.apply_answer(
                    services=services,
                    principal=principal,
                    question_id=question_id,
                    response=given[key],
                    named=f"inputResponses.{key}.",
                )
    except MCPError as refusal:  # asked again, the agent would answer the same: the request fails, said why
        await end_refused(services, principal, state.call_id, refusal)
        raise
    return state.call_id
