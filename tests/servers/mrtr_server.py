"""Test MCP server "mrtr-test": every Multi Round-Trip Request (MRTR) shape of protocol 2026-07-28.

Run:
    python tests/servers/mrtr_server.py              # stdio
    python tests/servers/mrtr_server.py --http 0     # Streamable HTTP on 127.0.0.1, any free port

With `--http PORT` the server prints exactly one line to stdout once it accepts connections:
`listening on http://127.0.0.1:<port>/mcp`.

Environment:
    MRTR_LOG        if set, one JSON line per tools/call, prompts/get and resources/read request is
                    appended to this file (see `RequestLog`).
    MRTR_ACTS_HTTP_STATUS   over HTTP, the status answering every retry of `acts` (after it acted)
    MRTR_STATE_KEY  HMAC key (at least 32 characters) for the `signed` tool; a fixed test key is used
                    when unset, so a restarted server still accepts states issued before the restart.

Tools. Decline/cancel is a normal result "stopped at <key>: <action>"; a missing or unusable
answer re-asks the same question; an unknown requestState is a -32602 error with
data {"reason": "invalid_request_state"}:
    two_rounds(topic)      asks "first" (name), state "r1"; then "second" (amount, count), state
                           "r2:<name>" (the name rides in the state); then "<name> <amount> <count>"
    state_only(n)          n results with only a requestState "s1".."s<n>", then
                           "done after <n> state-only rounds"
    form_and_url(message?) "approve" (form, boolean ok) + "connect" (url; its message is `message` when
                           given) in one round, no requestState; then
                           "approve=<action> ok=<ok> connect=<action>"
    echo_state(state, with_state=true)   asks "go" with requestState = `state` verbatim (none when
                           with_state is false); then JSON {"received_state", "has_request_state",
                           "matches"} as text and structuredContent
    signed(item)           asks "confirm" (boolean ok) with an HMAC-signed state (MRTR_STATE_KEY), so the
                           process may be restarted in between; then "signed <item> ok=<ok>"
    pid()                  this process id as text
    sample(payload)        asks "model" (sampling) with `payload` in the system prompt, two user messages
                           ("First: <payload>", then an image, then "Then: <payload>"), a model hint and a
                           stop sequence, maxTokens 77, state "sample"; the retry returns "sampled role=<role>
                           model=<model> stop=<stopReason>: <text>", followed by " (this request did not
                           declare sampling)" when the retry's client capabilities lack sampling
    ask_sampling(), ask_roots(), bad_schema(), bad_url(url?)   deliberate protocol violations (sampling
                           and roots requests, a nested object in a form, a URL that is not http(s):
                           `url`, by default a javascript: one); a retry with
                           their state returns "<tool> answered: <action or 'no answer'>"
    many_rounds()          asks "q1", "q2", ... forever (state "many:<n>")
    complete_now(x)        "hello <x>", no questions
    acts(item, code?)      asks "confirm" (boolean ok), state "acts"; a retry with an accepted answer
                           performs the action (its request log line is the record of it) and then
                           fails: a JSON-RPC error `code` (default -32603) "acted on <item>, then failed"
                           with data {"acted": <item>}; with MRTR_ACTS_HTTP_STATUS set, the HTTP server
                           answers that retry with that status (a plain-text body) in place of the error
    dies(marker, times=1)  exits at once, the request unanswered, the first `times` times it is called
                           (counted in the file at the path `marker`); afterwards "survived <marker>"
    slow(seconds)          "slept <seconds>", that many seconds later
    progress_rounds()      reports progress 1 of 2 ("first request") and asks "go" (boolean ok), state
                           "progress"; the retry reports 2 of 2 ("second request") and returns
                           "progress_rounds done"
    huge_state(size)       only a requestState of `size` characters; the retry returns
                           "huge_state got <len> chars, intact=<bool>"
    hostile(payload)       one question "probe" whose every piece of server text is `payload`: the message
                           (prefixed "Hostile: "), a property named `payload` (no title, so its name is
                           the label; description and default `payload`), a radio group and a multi-select
                           whose title, description, option values and labels (oneOf/anyOf const/title)
                           and default are `payload`, and a legacy enum/enumNames select (six options)
                           titled `payload` with one option `payload`; state "hostile";
                           the retry returns "hostile <action>: <payload> echoed=<bool>" (echoed: the
                           accepted content gave `payload` back under the `payload` property)
Prompt review_prompt(topic): asks "tone" (formal/casual), then "Write about <topic> in a <tone> tone.".
Resources secret://vault and the template secret://{name}: ask "reason" (minLength 3), then the text
"secret for <reason>".
"""

from __future__ import annotations

import hashlib
import json
import os
import string
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext

from console.demo.signing import invalid_state, seal, unseal
from console.listening import listening_socket, mcp_port, serve_mcp, serve_socket_and_announce

SERVER_NAME = "mrtr-test"
SERVER_VERSION = "1.0.0"
DEFAULT_STATE_KEY = "mrtr-test-only-state-key-not-a-secret-0123456789"
MIN_KEY_LENGTH = 32
SIGNED_TTL_SECONDS = 24 * 3600
MAX_LOGGED_STATE = 4096

ToolResult = types.CallToolResult | types.InputRequiredResult


# --- request log --------------------------------------------------------------------------


class RequestLog:
    """Appends one JSON line per interactive request to a file (no-op without a path).

    Each line is written with a single O_APPEND write under a lock and then fsynced, so
    concurrent handlers in this process never interleave lines and a test can read the file
    while the server is still running (or right after killing it).
    """

    def __init__(self, path: str | None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def record(
        self,
        ctx: ServerRequestContext[Any],
        name: str,
        arguments: Mapping[str, Any] | None,
        state: str | None,
    ) -> None:
        if self._path is None:
            return
        raw = ctx.params or {}
        entry = {
            "t": time.time(),
            "pid": os.getpid(),
            "method": ctx.method,
            "name": name,
            "request_id": ctx.request_id,
            "arguments": arguments,
            "has_request_state": "requestState" in raw,
            "request_state": state if state is not None and len(state) <= MAX_LOGGED_STATE else None,
            "request_state_len": None if state is None else len(state),
            "request_state_sha256": None if state is None else _sha256(state),
            # The wire form as received (camelCase keys), not a re-serialised model.
            "input_responses": raw.get("inputResponses"),
        }
        self._append(self._path, json.dumps(entry) + "\n")

    def _append(self, path: str, line: str) -> None:
        data = line.encode("ascii")  # json.dumps escapes everything non-ASCII
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)


def _sha256(text: str) -> str:
    # surrogatepass: a client can send a lone surrogate as a JSON \ud800 escape.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# --- small builders -----------------------------------------------------------------------


def text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def form(message: str, properties: dict[str, Any], required: Sequence[str] = ()) -> types.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def url_request(message: str, url: str) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestURLParams(message=message, url=url))


def ask(requests: Mapping[str, types.InputRequest], state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests=dict(requests), request_state=state)


def stopped(key: str, action: str) -> types.CallToolResult:
    return text_result(f"stopped at {key}: {action}")


def bad_argument(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message)


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Call:
    """One tools/call (or prompts/get, resources/read) attempt as the handlers see it."""

    arguments: Mapping[str, Any]
    state: str | None
    has_state: bool
    responses: Mapping[str, types.InputResponse]
    state_key: bytes
    sampling_declared: bool = False  # the request's client capabilities include sampling

    def answer(self, key: str) -> types.ElicitResult | None:
        response = self.responses.get(key)
        return response if isinstance(response, types.ElicitResult) else None

    def str_arg(self, name: str) -> str:
        value = self.arguments.get(name)
        if not isinstance(value, str):
            raise bad_argument(f"argument {name!r} must be a string")
        return value

    def int_arg(self, name: str) -> int:
        value = self.arguments.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise bad_argument(f"argument {name!r} must be a non-negative integer")
        return value

    def bool_arg(self, name: str, default: bool) -> bool:
        value = self.arguments.get(name, default)
        if not isinstance(value, bool):
            raise bad_argument(f"argument {name!r} must be a boolean")
        return value


# --- two_rounds ---------------------------------------------------------------------------


def _ask_first(topic: str) -> types.InputRequiredResult:
    question = form(
        f"About {topic}: what is your name?", {"name": {"type": "string", "title": "Name"}}, ["name"]
    )
    return ask({"first": question}, "r1")


def _ask_second(topic: str, name: str) -> types.InputRequiredResult:
    properties = {
        "amount": {"type": "number", "title": "Amount", "minimum": 0, "maximum": 100},
        "count": {"type": "integer", "title": "Count"},
    }
    question = form(f"Thanks {name}. How much and how many for {topic}?", properties, ["amount", "count"])
    # The name rides in the state: round 3 gets only the "second" answer back.
    return ask({"second": question}, f"r2:{name}")


def two_rounds(call: Call) -> ToolResult:
    topic = call.str_arg("topic")
    if call.state is None:
        return _ask_first(topic)
    if call.state == "r1":
        return _two_rounds_after_first(topic, call.answer("first"))
    if call.state.startswith("r2:"):
        return _two_rounds_after_second(topic, call.state.removeprefix("r2:"), call.answer("second"))
    raise invalid_state("unknown two_rounds state")


def _two_rounds_after_first(topic: str, answer: types.ElicitResult | None) -> ToolResult:
    if answer is None:
        return _ask_first(topic)
    if answer.action != "accept":
        return stopped("first", answer.action)
    name = (answer.content or {}).get("name")
    return _ask_second(topic, name) if isinstance(name, str) else _ask_first(topic)


def _two_rounds_after_second(topic: str, name: str, answer: types.ElicitResult | None) -> ToolResult:
    if answer is None:
        return _ask_second(topic, name)
    if answer.action != "accept":
        return stopped("second", answer.action)
    content = answer.content or {}
    amount, count = content.get("amount"), content.get("count")
    if not is_number(amount) or not isinstance(count, int) or isinstance(count, bool):
        return _ask_second(topic, name)
    return text_result(f"{name} {amount} {count}")


# --- state_only, form_and_url, echo_state -------------------------------------------------


def state_only(call: Call) -> ToolResult:
    rounds = call.int_arg("n")
    done = 0 if call.state is None else _parse_counter(call.state, "s")
    if done >= rounds:
        return text_result(f"done after {rounds} state-only rounds")
    return types.InputRequiredResult(request_state=f"s{done + 1}")


def _parse_counter(state: str, prefix: str) -> int:
    digits = state.removeprefix(prefix)
    if not state.startswith(prefix) or not digits.isdigit():
        raise invalid_state(f"expected {prefix}<number>")
    return int(digits)


def form_and_url(call: Call) -> ToolResult:
    approve, connect = call.answer("approve"), call.answer("connect")
    if approve is None or connect is None:
        return ask(
            {
                "approve": form(
                    "Approve the example action?", {"ok": {"type": "boolean", "title": "OK"}}, ["ok"]
                ),
                "connect": url_request(
                    str(call.arguments.get("message", "Connect your example account")),
                    "https://connect.example.com/start?flow=abc",
                ),
            }
        )
    ok = (approve.content or {}).get("ok") if approve.action == "accept" else None
    return text_result(f"approve={approve.action} ok={ok} connect={connect.action}")


ECHO_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "received_state": {"type": ["string", "null"]},
        "has_request_state": {"type": "boolean"},
        "matches": {"type": "boolean"},
    },
    "required": ["received_state", "has_request_state", "matches"],
}


def echo_state(call: Call) -> ToolResult:
    sent = call.str_arg("state")
    with_state = call.bool_arg("with_state", True)
    if call.answer("go") is None and not call.has_state:
        question = form("Echo test: continue?", {"ok": {"type": "boolean", "title": "OK"}})
        return ask({"go": question}, sent if with_state else None)
    matches = call.state == sent if with_state else not call.has_state
    report = {"received_state": call.state, "has_request_state": call.has_state, "matches": matches}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(report))],
        structured_content=report,
    )


# --- signed state that survives a restart ------------------------------------------------


def sign_state(key: bytes, payload: Mapping[str, Any]) -> str:
    return seal(key, payload, purpose=b"")  # MAC of the JSON alone, as this server always issued


def open_state(key: bytes, token: str) -> dict[str, Any]:
    try:
        return unseal(key, token, purpose=b"")
    except ValueError:
        raise invalid_state("tampered") from None


def _ask_confirm(key: bytes, item: str) -> types.InputRequiredResult:
    question = form(f"Sign {item}?", {"ok": {"type": "boolean", "title": "OK"}}, ["ok"])
    return ask(
        {"confirm": question}, sign_state(key, {"item": item, "exp": time.time() + SIGNED_TTL_SECONDS})
    )


def signed(call: Call) -> ToolResult:
    item = call.str_arg("item")
    if call.state is None:
        return _ask_confirm(call.state_key, item)
    payload = open_state(call.state_key, call.state)
    if payload.get("item") != item:
        raise invalid_state("foreign")
    exp = payload.get("exp")
    if not isinstance(exp, int | float) or time.time() >= exp:
        raise invalid_state("expired")
    answer = call.answer("confirm")
    if answer is None:
        return _ask_confirm(call.state_key, item)
    if answer.action != "accept":
        return stopped("confirm", answer.action)
    return text_result(f"signed {item} ok={(answer.content or {}).get('ok')}")


# --- deliberate protocol violations and edge shapes ---------------------------------------


def pid(call: Call) -> ToolResult:
    return text_result(str(os.getpid()))


def _second_round_summary(call: Call, tool: str, key: str) -> ToolResult:
    response = call.responses.get(key)
    if response is None:
        action = "no answer"
    elif isinstance(response, types.ElicitResult):
        action = response.action
    else:
        action = type(response).__name__
    return text_result(f"{tool} answered: {action}")


def ask_sampling(call: Call) -> ToolResult:
    if call.state is not None:
        return _second_round_summary(call, "ask_sampling", "llm")
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="Say hello."))
    request = types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=50)
    )
    return ask({"llm": request}, "sampling")


def ask_roots(call: Call) -> ToolResult:
    if call.state is not None:
        return _second_round_summary(call, "ask_roots", "roots")
    return ask({"roots": types.ListRootsRequest()}, "roots")


def bad_schema(call: Call) -> ToolResult:
    if call.state is not None:
        return _second_round_summary(call, "bad_schema", "profile")
    address = {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
    return ask(
        {"profile": form("Your address, nested (not allowed in form mode).", {"address": address})},
        "bad_schema",
    )


def bad_url(call: Call) -> ToolResult:
    if call.state is not None:
        return _second_round_summary(call, "bad_url", "link")
    url = call.arguments.get("url", "javascript:alert(1)")
    return ask({"link": url_request("Open this link", str(url))}, "bad_url")


def many_rounds(call: Call) -> ToolResult:
    n = 1 if call.state is None else _parse_counter(call.state, "many:") + 1
    question = form(f"Question {n}?", {"answer": {"type": "string", "title": "Answer"}})
    return ask({f"q{n}": question}, f"many:{n}")


def complete_now(call: Call) -> ToolResult:
    return text_result(f"hello {call.str_arg('x')}")


ACTS_STATE = "acts"


def acts(call: Call) -> ToolResult:
    item = call.str_arg("item")
    if call.state is None:
        return ask(
            {"confirm": form(f"Act on {item}?", {"ok": {"type": "boolean", "title": "OK"}})}, ACTS_STATE
        )
    if call.state != ACTS_STATE:
        raise invalid_state("unknown acts state")
    answer = call.answer("confirm")
    if answer is None or answer.action != "accept":
        return stopped("confirm", "no answer" if answer is None else answer.action)
    code = call.arguments.get("code", types.INTERNAL_ERROR)
    raise MCPError(code=code, message=f"acted on {item}, then failed", data={"acted": item})


def dies(call: Call) -> ToolResult:
    marker, times = Path(call.str_arg("marker")), call.arguments.get("times", 1)
    exits = int(marker.read_text()) if marker.exists() else 0
    if exits >= times:
        return text_result(f"survived {marker}")
    marker.write_text(str(exits + 1))
    os._exit(3)  # with the request out: whether it ran is unknown to the client


async def progress_rounds(ctx: ServerRequestContext[Any], call: Call) -> ToolResult:
    if call.state != "progress":
        await ctx.session.report_progress(1, 2, "first request")
        go = form("Go on?", {"ok": {"type": "boolean", "title": "Ok"}}, ["ok"])
        return ask({"go": go}, "progress")
    await ctx.session.report_progress(2, 2, "second request")
    return text_result("progress_rounds done")


async def slow(call: Call) -> ToolResult:
    seconds = call.int_arg("seconds")
    await anyio.sleep(seconds)
    return text_result(f"slept {seconds}")


SLOW = types.Tool(
    name="slow",
    description="Answers after the given number of seconds.",
    input_schema={"type": "object", "properties": {"seconds": {"type": "integer"}}, "required": ["seconds"]},
)


PROGRESS_ROUNDS = types.Tool(
    name="progress_rounds",
    description="Reports progress in each of two requests.",
    input_schema={"type": "object", "properties": {}},
)


def _huge(size: int) -> str:
    pattern = string.ascii_letters + string.digits
    return (pattern * (size // len(pattern) + 1))[:size]


def huge_state(call: Call) -> ToolResult:
    size = call.int_arg("size")
    if call.state is None:
        return types.InputRequiredResult(request_state=_huge(size))
    return text_result(f"huge_state got {len(call.state)} chars, intact={call.state == _huge(size)}")


# --- hostile server text ------------------------------------------------------------------


def _hostile_question(payload: str) -> types.ElicitRequest:
    titled = [{"const": payload, "title": payload}, {"const": "plain", "title": "Plain"}]
    properties: dict[str, Any] = {
        payload: {"type": "string", "description": payload, "default": payload},
        "choice": {
            "type": "string",
            "title": payload,
            "description": payload,
            "oneOf": titled,
            "default": payload,
        },
        "legacy": {
            "type": "string",
            "title": payload,
            "enum": [payload, *(f"plain-{n}" for n in range(1, 6))],  # six options: a <select>
            "enumNames": [payload, *(f"Plain {n}" for n in range(1, 6))],
        },
        "many": {
            "type": "array",
            "title": payload,
            "description": payload,
            "items": {"anyOf": titled},
            "default": [payload],
        },
    }
    return form(f"Hostile: {payload}", properties)


def hostile(call: Call) -> ToolResult:
    payload = call.str_arg("payload")
    if call.state is None:
        return ask({"probe": _hostile_question(payload)}, "hostile")
    if call.state != "hostile":
        raise invalid_state("unknown hostile state")
    answer = call.answer("probe")
    if answer is None:
        return ask({"probe": _hostile_question(payload)}, "hostile")
    echoed = answer.action == "accept" and (answer.content or {}).get(payload) == payload
    return text_result(f"hostile {answer.action}: {payload} echoed={echoed}")


# --- tool table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    tool: types.Tool
    run: Callable[[Call], ToolResult]


def _schema(properties: dict[str, Any] | None = None, required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = list(required)
    return schema


STRING = {"type": "string"}
INTEGER = {"type": "integer", "minimum": 0}


def sample(call: Call) -> ToolResult:
    payload = call.str_arg("payload")
    reply = call.responses.get("model")
    if call.state == "sample" and isinstance(reply, types.CreateMessageResult):
        text = reply.content.text if isinstance(reply.content, types.TextContent) else "?"
        undeclared = "" if call.sampling_declared else " (this request did not declare sampling)"
        return text_result(
            f"sampled role={reply.role} model={reply.model} stop={reply.stop_reason}: {text}{undeclared}"
        )
    if call.state is not None:
        raise invalid_state("unknown sample state")
    messages = [
        types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"First: {payload}")),
        types.SamplingMessage(
            role="assistant", content=types.TextContent(type="text", text="An earlier reply")
        ),
        types.SamplingMessage(
            role="user", content=types.ImageContent(type="image", data="AA==", mime_type="image/png")
        ),
        types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"Then: {payload}")),
    ]
    params = types.CreateMessageRequestParams(
        messages=messages,
        system_prompt=f"System: {payload}",
        model_preferences=types.ModelPreferences(hints=[types.ModelHint(name=payload)], cost_priority=0.2),
        include_context="thisServer",
        temperature=0.5,
        stop_sequences=[payload],
        max_tokens=77,
    )
    return ask({"model": types.CreateMessageRequest(params=params)}, "sample")


def _spec(
    run: Callable[[Call], ToolResult],
    description: str,
    schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
    annotations: types.ToolAnnotations | None = None,
) -> ToolSpec:
    tool = types.Tool(
        name=run.__name__,
        description=description,
        input_schema=schema or _schema(),
        output_schema=output_schema,
        annotations=annotations,
    )
    return ToolSpec(tool=tool, run=run)


TOOLS: dict[str, ToolSpec] = {
    spec.tool.name: spec
    for spec in (
        _spec(
            two_rounds, "Two questions in two rounds, then a summary.", _schema({"topic": STRING}, ["topic"])
        ),
        _spec(state_only, "n rounds with only a requestState, then done.", _schema({"n": INTEGER}, ["n"])),
        _spec(
            form_and_url,
            "One round with a form and a URL question.",
            _schema({"message": STRING}),
            annotations=types.ToolAnnotations(read_only_hint=True),  # so policy tests have a read-only tool
        ),
        _spec(
            echo_state,
            "Sends `state` as requestState and reports what came back.",
            _schema({"state": STRING, "with_state": {"type": "boolean", "default": True}}, ["state"]),
            ECHO_OUTPUT_SCHEMA,
        ),
        _spec(
            signed, "HMAC-signed requestState that survives a restart.", _schema({"item": STRING}, ["item"])
        ),
        _spec(
            pid,
            "The server's process id.",
            annotations=types.ToolAnnotations(title="Process id", read_only_hint=True, open_world_hint=False),
        ),
        _spec(ask_sampling, "Asks for sampling although the client never offered it."),
        _spec(ask_roots, "Asks for roots although the client never offered them."),
        _spec(bad_schema, "A form elicitation with a nested object property."),
        _spec(bad_url, "A URL elicitation with a javascript: URL."),
        _spec(many_rounds, "Asks a new question every round, forever."),
        _spec(
            complete_now,
            "Completes at once.",
            _schema({"x": STRING}, ["x"]),
            annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=False),
        ),
        _spec(
            acts,
            "Asks to confirm, acts on `item` once confirmed, then fails.",
            _schema({"item": STRING, "code": {"type": "integer"}}, ["item"]),
        ),
        _spec(
            dies,
            "Exits while answering the first `times` times, answers afterwards.",
            _schema({"marker": STRING, "times": INTEGER}, ["marker"]),
        ),
        _spec(huge_state, "A requestState of `size` characters.", _schema({"size": INTEGER}, ["size"])),
        _spec(
            hostile,
            "One question made of `payload` everywhere, to test that server text stays inert.",
            _schema({"payload": STRING}, ["payload"]),
        ),
        _spec(
            sample,
            "A sampling request made of `payload` everywhere; says what came back.",
            _schema({"payload": STRING}, ["payload"]),
        ),
    )
}


# --- prompt and resource ------------------------------------------------------------------

PROMPT = types.Prompt(
    name="review_prompt",
    description="Asks for the tone, then returns a writing prompt.",
    arguments=[types.PromptArgument(name="topic", description="What to write about", required=True)],
)
PROMPT_STATE = "review_prompt:tone"
RESOURCE_SCHEME = "secret://"
REASON_STATE = "secret:reason"
TONES = ("formal", "casual")


def _check_fixed_state(call: Call, expected: str) -> None:
    if call.state is not None and call.state != expected:
        raise invalid_state("unexpected state")


def _ask_tone(topic: str) -> types.InputRequiredResult:
    tone_field = {"type": "string", "title": "Tone", "enum": list(TONES)}
    return ask({"tone": form(f"Which tone for {topic}?", {"tone": tone_field}, ["tone"])}, PROMPT_STATE)


def _prompt_text(text: str) -> types.GetPromptResult:
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.GetPromptResult(messages=[message])


def review_prompt(call: Call) -> types.GetPromptResult | types.InputRequiredResult:
    topic = call.str_arg("topic")
    _check_fixed_state(call, PROMPT_STATE)
    answer = call.answer("tone")
    if answer is None:
        return _ask_tone(topic)
    if answer.action != "accept":
        return _prompt_text(f"stopped at tone: {answer.action}")
    tone = (answer.content or {}).get("tone")
    if tone not in TONES:
        return _ask_tone(topic)
    return _prompt_text(f"Write about {topic} in a {tone} tone.")


def _ask_reason(uri: str) -> types.InputRequiredResult:
    reason_field = {"type": "string", "title": "Reason", "minLength": 3}
    return ask(
        {"reason": form(f"Why do you need {uri}?", {"reason": reason_field}, ["reason"])}, REASON_STATE
    )


def _resource_text(uri: str, text: str) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)]
    )


def read_secret(uri: str, call: Call) -> types.ReadResourceResult | types.InputRequiredResult:
    if not uri.startswith(RESOURCE_SCHEME) or uri == RESOURCE_SCHEME:
        raise bad_argument(f"Unknown resource: {uri}")
    _check_fixed_state(call, REASON_STATE)
    answer = call.answer("reason")
    if answer is None:
        return _ask_reason(uri)
    if answer.action != "accept":
        return _resource_text(uri, f"stopped at reason: {answer.action}")
    reason = (answer.content or {}).get("reason")
    if not isinstance(reason, str) or len(reason) < 3:
        return _ask_reason(uri)
    return _resource_text(uri, f"secret for {reason}")


# --- server -------------------------------------------------------------------------------


def _call(
    ctx: ServerRequestContext[Any],
    params: types.InputResponseRequestParams,
    arguments: Mapping[str, Any] | None,
    state_key: bytes,
) -> Call:
    return Call(
        arguments=arguments or {},
        state=params.request_state,
        has_state="requestState" in (ctx.params or {}),
        responses=params.input_responses or {},
        state_key=state_key,
        sampling_declared=getattr(ctx.session.client_capabilities, "sampling", None) is not None,
    )


def _odd_tool(text: str) -> types.Tool:
    """A listed-only tool whose title, description and annotation title are `text` (MRTR_TOOL_TEXT)."""
    return types.Tool(
        name="odd_text",
        title=text,
        description=text,
        input_schema=_schema(),
        annotations=types.ToolAnnotations(title=text, destructive_hint=True),
    )


def build_server(log: RequestLog, state_key: bytes, tool_text: str | None = None) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        extra = [_odd_tool(tool_text)] if tool_text else []
        listed = [*(spec.tool for spec in TOOLS.values()), PROGRESS_ROUNDS, SLOW, *extra]
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> ToolResult:
        log.record(ctx, params.name, params.arguments, params.request_state)
        if params.name == PROGRESS_ROUNDS.name:  # the one tool that reports progress, so it awaits
            return await progress_rounds(ctx, _call(ctx, params, params.arguments, state_key))
        if params.name == SLOW.name:
            return await slow(_call(ctx, params, params.arguments, state_key))
        spec = TOOLS.get(params.name)
        if spec is None:
            raise bad_argument(f"Unknown tool: {params.name}")
        return spec.run(_call(ctx, params, params.arguments, state_key))

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[PROMPT])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        log.record(ctx, params.name, params.arguments, params.request_state)
        if params.name != PROMPT.name:
            raise bad_argument(f"Unknown prompt: {params.name}")
        return review_prompt(_call(ctx, params, params.arguments, state_key))

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        vault = types.Resource(uri=f"{RESOURCE_SCHEME}vault", name="vault", mime_type="text/plain")
        return types.ListResourcesResult(resources=[vault])

    async def list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        template = types.ResourceTemplate(
            uri_template=f"{RESOURCE_SCHEME}{{name}}", name="secret", mime_type="text/plain"
        )
        return types.ListResourceTemplatesResult(resource_templates=[template])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        log.record(ctx, params.uri, None, params.request_state)
        return read_secret(params.uri, _call(ctx, params, None, state_key))

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )


class FailedActs:
    """ASGI wrapper: a retry of `acts` with its request state is served, and its response replaced by an
    HTTP `status`, as a proxy in front of a server that acted and then broke answers."""

    def __init__(self, app: Any, status: int) -> None:
        self.app, self.status = app, status

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        received = []
        while True:
            message = await receive()
            received.append(message)
            if not message.get("more_body"):
                break
        replay = iter(received)

        async def receive_again() -> dict[str, Any]:
            message: dict[str, Any] | None = next(replay, None)
            return await receive() if message is None else message

        if not _is_acts_retry(b"".join(m.get("body", b"") for m in received)):
            await self.app(scope, receive_again, send)
            return

        async def discard(message: dict[str, Any]) -> None:
            pass

        await self.app(scope, receive_again, discard)
        body = b"internal server error"
        headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _is_acts_retry(body: bytes) -> bool:
    try:
        message = json.loads(body)
    except ValueError:
        return False
    params = message.get("params") if isinstance(message, dict) else None
    return (
        message.get("method") == "tools/call"
        and isinstance(params, dict)
        and params.get("name") == "acts"
        and "requestState" in params
    )


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="MRTR test MCP server.")
    state_key = os.environ.get("MRTR_STATE_KEY", DEFAULT_STATE_KEY)
    if len(state_key) < MIN_KEY_LENGTH:
        sys.stderr.write(
            f"mrtr-test: refusing to start: MRTR_STATE_KEY must be at least {MIN_KEY_LENGTH} characters\n"
        )
        return 2
    server = build_server(
        RequestLog(os.environ.get("MRTR_LOG")), state_key.encode(), os.environ.get("MRTR_TOOL_TEXT")
    )
    failing = os.environ.get("MRTR_ACTS_HTTP_STATUS")
    if port is not None and failing:
        app = FailedActs(server.streamable_http_app(host="127.0.0.1"), int(failing))
        anyio.run(serve_socket_and_announce, app, listening_socket("127.0.0.1", port), "/mcp")
    else:
        serve_mcp(server, port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
