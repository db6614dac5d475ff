"""Turning a server's inputRequests into questions for people and requests the call's agent answers,
refusing what we never advertised."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import mcp.types as types
from pydantic import ValidationError

from console.errors import McpProtocolError
from console.forms import SchemaError, parse_schema
from console.mcp.endpoint import ROOTS, SAMPLING

ELICIT = "elicitation/create"
RELAYABLE = (SAMPLING, ROOTS)  # what an agent may answer itself (the gateway)
MAX_REPLY_CHARS = 100_000
# A sampling request asked of people is answered like a form with one field: the model's reply.
REPLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reply": {
            "type": "string",
            "title": "The model's reply",
            "description": "The server receives this text as the model's answer.",
            "minLength": 1,
            "maxLength": MAX_REPLY_CHARS,
        }
    },
    "required": ["reply"],
}
SHOWN_PROMPT_CHARS = 300


@dataclass(frozen=True)
class Question:
    key: str
    mode: Literal["form", "url", "sampling"]
    message: str
    schema: dict[str, Any] | None
    url: str | None
    request: dict[str, Any]


@dataclass(frozen=True)
class AgentAsk:
    """An input request the call's agent answers (its model samples, or it lists its roots)."""

    key: str
    method: str
    params: dict[str, Any]


def parse_input_requests(
    input_requests: dict[str, Any], relayed: frozenset[str] = frozenset(), *, people_sample: bool = False
) -> tuple[list[Question], list[AgentAsk]]:
    """Questions for people and requests for the agent (of the `relayed` methods), in the server's key
    order. With `people_sample`, a sampling request the agent does not answer is a question for people.

    Raises:
        McpProtocolError: a request we never advertised (sampling, roots, unless relayed or asked of
            people), a form schema outside the allowed subset, a URL that is not http(s), or a
            malformed entry.
    """
    questions: list[Question] = []
    asks: list[AgentAsk] = []
    for key, request in input_requests.items():
        if not isinstance(request, dict):
            raise McpProtocolError(f"input request {key!r} is not an object")
        method = request.get("method")
        if method in relayed:
            params = request.get("params")
            asks.append(AgentAsk(key, str(method), params if isinstance(params, dict) else {}))
        elif method == SAMPLING and people_sample:
            questions.append(_sampling_question(key, request))
        else:
            questions.append(_question(key, request, relayed))
    return questions, asks


def _question(key: str, request: dict[str, Any], relayed: frozenset[str]) -> Question:
    method = request.get("method")
    if method != ELICIT:
        what = "elicitation" + "".join(f", {m}" for m in sorted(relayed))
        raise McpProtocolError(
            f"server sent a {method!r} input request for {key!r}, which this client never advertised "
            f"(it supports {what} only)"
        )
    params = request.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("message"), str):
        raise McpProtocolError(f"elicitation {key!r} has no message")
    mode = params.get("mode", "form")
    if mode == "form":
        schema = params.get("requestedSchema")
        try:
            parse_schema(schema)
        except SchemaError as exc:
            raise McpProtocolError(f"elicitation {key!r} has an invalid form schema: {exc}") from None
        return Question(key, "form", params["message"], cast(dict[str, Any], schema), None, request)
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not _is_web_url(url):
            # Without its query or fragment: the message reaches the audit log and the run page.
            shown = str(url).split("?", 1)[0].split("#", 1)[0][:200]
            raise McpProtocolError(f"elicitation {key!r} has a URL that is not http(s): {shown!r}")
        return Question(key, "url", params["message"], None, url, request)
    raise McpProtocolError(f"elicitation {key!r} has unknown mode {str(mode)[:50]!r}")


def _sampling_question(key: str, request: dict[str, Any]) -> Question:
    try:
        params = types.CreateMessageRequestParams.model_validate(request.get("params"))
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise McpProtocolError(f"sampling request {key!r} is malformed: {where}: {problem['msg']}") from None
    asked = _last_user_text(params.messages)
    message = "Write the model's reply" + (f" to: {asked}" if asked else "")
    return Question(key, "sampling", message, REPLY_SCHEMA, None, request)


def _last_user_text(messages: list[types.SamplingMessage]) -> str:
    """The text of the last user message, shortened for lists and notifications."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        blocks = message.content if isinstance(message.content, list) else [message.content]
        text = " ".join(block.text for block in blocks if isinstance(block, types.TextContent)).strip()
        if text:
            return text if len(text) <= SHOWN_PROMPT_CHARS else text[: SHOWN_PROMPT_CHARS - 1] + "…"
    return ""


def _is_web_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False
