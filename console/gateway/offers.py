"""Questions the agent's own client may answer too: those the run's owner may answer alone, under the
question's policy, when the client declared that kind of elicitation. Whoever answers first decides;
the other place then sees who did."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import mcp.types as types
from mcp import MCPError
from pydantic import ValidationError
from sqlalchemy import select

from console.calls.models import AgentRequest, Elicitation
from console.calls.questions.agent_answers import invalid_field
from console.calls.questions.decisions import ACTIONS, answer, answer_refusal
from console.calls.questions.waiting import Waiting
from console.calls.states import QuestionMode
from console.dispatch.taking import resume_after_commit
from console.errors import Conflict, Gone, InvalidInput
from console.gateway.forwarding import Services
from console.identity import Principal
from console.transactions import transaction

logger = logging.getLogger(__name__)


def offerable(waiting: Waiting, principal: Principal, capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the question may go to the agent's client as well as to people: the client declared the
    mode, and the owner (the token's user) may decide it alone, with no fresh sign-in (a token has none)."""
    elicitation = capabilities.elicitation if capabilities is not None else None
    question = waiting.question
    # A gate is a person's say on what the agent does; a sampling question went to people because the
    # agent has no model to answer it; a connect happens in the owner's browser, at the console.
    if elicitation is None or question.mode in (
        QuestionMode.GATE,
        QuestionMode.SAMPLING,
        QuestionMode.CONNECT,
    ):
        return False
    if question.mode == QuestionMode.URL:
        declared = elicitation.url is not None
    else:  # an empty elicitation capability means form mode
        declared = elicitation.form is not None or elicitation.url is None
    if not declared or question.owner_id != principal.user_id:
        return False
    sole = question.required_approvals == 1 and question.step_up_minutes is None
    return sole and answer_refusal(principal.viewer, question) is None


def input_request(waiting: Waiting) -> dict[str, Any]:
    """The question as an `elicitation/create` input request, as the upstream server asked it."""
    question = waiting.question
    params: dict[str, Any] = {"mode": question.mode, "message": question.message}
    if question.mode == QuestionMode.URL:
        params["url"] = question.url or ""
    else:
        params["requestedSchema"] = json.loads(question.schema_json or "{}")
    return {"method": "elicitation/create", "params": params}


@dataclass(frozen=True)
class Offered:
    """What the agent's client is given to answer, each under the key it answers by: the server's own key
    (a client may rely on it, and keys are unique within a round), else the console's id."""

    questions: dict[str, Waiting]
    asks: dict[str, AgentRequest]

    @classmethod
    def of(cls, questions: list[Waiting], asks: list[AgentRequest]) -> Offered:
        taken = Counter([w.question.key for w in questions] + [a.key for a in asks])

        def key(server_key: str, console_id: str) -> str:
            return server_key if taken[server_key] == 1 else console_id

        return cls({key(w.question.key, w.id): w for w in questions}, {key(a.key, a.id): a for a in asks})

    def __bool__(self) -> bool:
        return bool(self.questions or self.asks)

    def input_requests(self) -> dict[str, Any]:
        requests = {key: input_request(w) for key, w in self.questions.items()}
        requests.update(
            {key: {"method": a.method, "params": json.loads(a.params_json)} for key, a in self.asks.items()}
        )
        return requests


async def apply_answer(
    *,
    services: Services,
    principal: Principal,
    question_id: str,
    response: Any,
    named: str = "",
) -> bool:
    """Decide the question with the agent client's answer, as its owner; False when someone else decided
    first (or it ended meanwhile).

    Raises:
        MCPError: INVALID_PARAMS: the console refused the answer (an unknown action, content that does
            not fit the form, content on a link); `data` names the field, under `named` (where the
            answer sits in the agent's request).
        Forbidden, NotFound: the caller may not answer it (recorded).
    """
    if not isinstance(response, dict):
        raise refused(named, "the answer is not an elicitation result", {"": "must be an object"})
    action = response.get("action")
    if action not in ACTIONS:
        choices = f"must be one of {', '.join(ACTIONS)}"
        raise refused(named, "the answer has no valid action", {"action": choices})
    # Recorded as decided in the owner's own agent, so the question page says where it was answered.
    viewer = replace(principal.viewer, via=f"mcp:{principal.token_id}")
    try:
        async with transaction(services.factory) as session:
            decision = await answer(
                session=session,
                viewer=viewer,
                elicitation_id=question_id,
                action=str(action),
                content=response.get("content") if action == "accept" else None,
            )
            await resume_after_commit(
                session=session, signals=services.signals, dispatcher=services.dispatcher, decision=decision
            )
    except (Conflict, Gone):
        return False  # the first answer won, elsewhere
    except InvalidInput as exc:
        logger.info("gateway: refused an agent's answer to %s: %s %s", question_id, exc.message, exc.fields)
        async with services.factory() as session:
            mode = await session.scalar(select(Elicitation.mode).where(Elicitation.id == question_id))
        errors = exc.fields or {"": exc.message}
        if mode == "url":  # the only thing a link's answer can get wrong is its content
            raise refused(named, exc.message, {"content": next(iter(errors.values()))}) from None
        raise refused(named, exc.message, {_in_content(name): why for name, why in errors.items()}) from None
    return True


def refused(named: str, message: str, errors: dict[str, str]) -> MCPError:
    """The JSON-RPC error telling the agent which field of its answer the console refused, and why."""
    fields = {f"{named}{path}".rstrip(".") or "response": why for path, why in errors.items()}
    field, reason = next(iter(fields.items()))
    return MCPError(
        types.INVALID_PARAMS,
        f"the console refused the answer ({message}): {field} {reason}",
        {"field": field, "reason": reason, "fields": fields},
    )


def malformed(exc: ValidationError) -> MCPError:
    """The JSON-RPC error for an answer that is not even the result its request asks for: the field is
    where every way of reading it failed (the common part of the errors' paths)."""
    field, reason = invalid_field(exc)
    return refused("", "the answer is not a valid result", {field: reason})


def _in_content(name: str) -> str:
    return f"content.{name}" if name else "content"
