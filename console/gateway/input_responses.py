"""The `inputResponses` of an agent's request are read by the console, never by the SDK: each answers a
question or a server's request the console offered, and the console checks it against what it answers
(`offers.apply_answer`, `rounds.answer_ask`), naming the field it refuses and ending the call. The SDK's
own check of a request's params would refuse an answer that is no result at all (an unknown action,
content that is no object) before any handler ran, with -32602 and no field, and leave the call waiting.

So a server middleware takes them out of the params before the SDK checks those (its middleware runs
before params validation, and may hand the rest of the chain other params), and the handler reads them
here. They come from a body the transport read within its cap.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import Any

from mcp.server.context import CallNext, HandlerResult

from console.gateway.context import Context
from console.gateway.offers import refused

ANSWERING = frozenset({"tools/call", "prompts/get", "resources/read", "tasks/update"})
FIELD = "inputResponses"
_ABSENT = object()
_given: ContextVar[Any] = ContextVar("gateway_input_responses", default=_ABSENT)


async def take_aside(ctx: Context, call_next: CallNext) -> HandlerResult:
    """The server middleware: a request's answers kept for its handler, the rest checked by the SDK."""
    params = ctx.params
    if ctx.method not in ANSWERING or not isinstance(params, Mapping) or FIELD not in params:
        return await call_next(ctx)
    rest = {name: value for name, value in params.items() if name != FIELD}
    token = _given.set(params[FIELD])
    try:
        return await call_next(replace(ctx, params=rest))
    finally:
        _given.reset(token)


def given() -> Any:
    """The request's `inputResponses` as the agent sent them (None without any), unchecked."""
    answers = _given.get()
    return None if answers is _ABSENT else answers


def answers_in(answers: Any) -> dict[str, Any]:
    """The answers by key (none for None).

    Raises:
        MCPError: INVALID_PARAMS naming `inputResponses`: they are no object.
    """
    if answers is None:
        return {}
    if not isinstance(answers, dict):
        raise refused("", "the answers are not an object", {FIELD: "must be an object"})
    return answers
