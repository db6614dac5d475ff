"""Questions the agent's client takes while people may answer them too: a 2026-07-28 agent gets them in
an `input_required` result with the console's own sealed `requestState` and answers on its retry; a
2025-11-25 session gets them pushed as `elicitation/create` while its request is held. The first
answer, here or in the browser, decides."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError

from console.elicitations.waiting import Waiting
from console.gateway import offers
from console.gateway.context import Context
from console.gateway.forwarding import Outcome, Services, Stop
from console.gateway.request_state import OfferedState, StateRefused
from console.identity import Principal

logger = logging.getLogger(__name__)
Held = Callable[[Stop], Awaitable[Outcome]]


def bound_to(principal: Principal) -> str:
    return f"{principal.user_id}:{principal.token_id}"


async def with_offers(ctx: Context, services: Services, principal: Principal, held: Held) -> Outcome:
    """Run `held` (a hold on a call) so that questions the client may answer go to it as well."""
    capabilities = ctx.session.client_capabilities
    if not ctx.session.can_send_request:  # 2026-07-28: hand them over in the result, at once
        return await held(lambda waiting: any(offers.offerable(w, principal, capabilities) for w in waiting))
    pushed: set[str] = set()
    async with anyio.create_task_group() as tasks:

        def push_new(waiting: list[Waiting]) -> bool:
            for question in waiting:
                if question.id not in pushed and offers.offerable(question, principal, capabilities):
                    pushed.add(question.id)
                    tasks.start_soon(_push, ctx, services, principal, question)
            return False

        outcome = await held(push_new)
        tasks.cancel_scope.cancel()  # decided elsewhere, or the call moved on: the client's prompt is moot
    return outcome


async def _push(ctx: Context, services: Services, principal: Principal, waiting: Waiting) -> None:
    question = offers.input_request(waiting)["params"]
    try:
        if waiting.mode == "url":
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
    response = reply.model_dump(by_alias=True, mode="json", exclude_none=True)
    await offers.apply_answer(
        services=services, principal=principal, question_id=waiting.id, response=response
    )


def handed_over(
    services: Services, principal: Principal, ctx: Context, outcome: Outcome
) -> dict[str, Any] | None:
    """The `input_required` result giving a 2026-07-28 client the questions it may answer, if any."""
    if outcome.ended or ctx.session.can_send_request:
        return None
    capabilities = ctx.session.client_capabilities
    mine = [w for w in outcome.waiting if offers.offerable(w, principal, capabilities)]
    if not mine:
        return None
    expires = max(w.question.expires_at.timestamp() for w in mine)
    state = OfferedState(outcome.view.call.id, tuple(w.id for w in mine), min(expires, time.time() + 86400))
    return {
        "resultType": "input_required",
        "inputRequests": {w.id: offers.input_request(w) for w in mine},
        "requestState": services.seal.seal(state, bound_to=bound_to(principal)),
    }


async def take_answers(
    services: Services, principal: Principal, request_state: str, responses: dict[str, Any] | None
) -> str:
    """Apply a retry's answers to the questions its state names; the console call to hold again.

    Raises:
        MCPError: the state is not this console's for this caller, or expired.
    """
    try:
        state = services.seal.open(request_state, bound_to=bound_to(principal))
    except StateRefused as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc), {"reason": "invalid_request_state"}) from None
    for question_id in state.question_ids:
        response = (responses or {}).get(question_id)
        if response is None:
            continue  # not answered this time: it is offered again if it still waits
        dumped = response if isinstance(response, dict) else response.model_dump(by_alias=True, mode="json")
        await offers.apply_answer(
            services=services, principal=principal, question_id=question_id, response=dumped
        )
    return state.call_id
