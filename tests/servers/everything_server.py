"""Test MCP server "everything-test": the fixtures the official conformance suite grades a server with.

Run:
    python tests/servers/everything_server.py              # stdio
    python tests/servers/everything_server.py --http 0     # Streamable HTTP on 127.0.0.1, any free port

With `--http PORT` the server prints exactly one line to stdout once it accepts connections:
`listening on http://127.0.0.1:<port>/mcp`. Both wires are served on that one endpoint: 2025-11-25
(initialize handshake, sessions, SSE resumption through an in-memory event store, retry 100 ms) and
2026-07-28 (stateless; questions travel as `input_required` results). Host/Origin must be loopback.

Questions. Every interactive tool and prompt is written once, as a 2026-07-28 Multi Round-Trip Request:
it returns `input_required` with `inputRequests` until the retry carries the answers. On 2025-11-25
the server asks the same questions itself, pushing each request to the client within the call, and
retries the handler with the answers. A question needs the matching client capability (elicitation,
sampling or roots), else the call fails with -32021 and data {"requiredCapabilities": {<name>: {}}}.
Every requestState is HMAC-signed (fixed test key) and bound to the tool or prompt name; a state that
fails the check is a -32602 error with data {"reason": "invalid_request_state"}. A declined or
cancelled form answer gives "stopped at <key>: <action>"; a missing or unusable answer re-asks.

Tools, content:
    test_simple_text            "This is a simple text response for testing."
    test_image_content          one image/png (1x1 red pixel)
    test_audio_content          one audio/wav (four silent samples)
    test_embedded_resource      resource test://embedded-resource, text/plain
                                "This is an embedded resource content."
    test_multiple_content_types text "Multiple content types test:", the image, and resource
                                test://mixed-content-resource (application/json
                                '{"test": "data", "value": 123}')
    test_error_handling         isError result "This tool intentionally returns an error for testing"
    json_schema_2020_12_tool    "json_schema_2020_12_tool"; its inputSchema uses $schema, $defs with $anchor,
                                $ref, allOf/anyOf, if/then/else and additionalProperties: false
    test_x_mcp_header(region?)  "region=<region>" ("<none>" by default); `region` is mirrored into the
                                Mcp-Param-Region header (x-mcp-header)
Tools, notifications (logging: info level, subject to logging/setLevel on 2025-11-25 and to the request's
`_meta` io.modelcontextprotocol/logLevel on 2026-07-28, where nothing is logged without it):
    test_tool_with_logging      logs "Tool execution started", "Tool processing data", "Tool execution
                                completed" 50 ms apart; "Tool with logging executed successfully"
    test_tool_with_progress     progress 0, 50, 100 of 100, 50 ms apart (when a progressToken was sent);
                                "Progress reported: 0, 50, 100 of 100"
    test_logging_tool           logs "test_logging_tool ran"; "Logged one info message."
    test_reconnection           closes the request's SSE stream (2025-11-25 with the event store), waits
                                100 ms; "Reconnection test completed" (the client gets it by resuming)
Tools, questions:
    test_sampling(prompt)       sampling of `prompt` (maxTokens 100); "LLM response: <text>"
    test_elicitation(message)   form {username, email} (both required strings);
                                "User response: action=<action>, content=<JSON>"
    test_elicitation_sep1034_defaults   form with defaults: name "John Doe", age 30, score 95.5, status
                                "active" (enum active/inactive/pending), verified true;
                                "Elicitation completed: action=<action>, content=<JSON>"
    test_elicitation_sep1330_enums      form with the five enum shapes: untitledSingle (enum),
                                titledSingle (oneOf const/title), legacyEnum (enum + enumNames), untitledMulti
                                (array of enum), titledMulti (array of anyOf const/title); same reply text
    test_streaming_elicitation  form {confirmed: boolean}; "Streaming elicitation answered: <action>"
    test_missing_capability     needs the sampling capability (-32021 without it) but asks nothing;
                                "Client declared sampling capability; proceeding."
Tools, 2026-07-28 input_required fixtures (same behaviour on 2025-11-25 through pushed requests):
    test_input_required_result_elicitation   asks "user_name" (form {name}), no state; "Hello, <name>!"
    test_input_required_result_sampling      asks "capital_question" (sampling "What is the capital of
                                France?", maxTokens 100), no state; "Model said: <text>"
    test_input_required_result_list_roots    asks "client_roots" (roots/list), no state;
                                "Client exposed <n> root(s)."
    test_input_required_result_request_state asks "confirm" (form {ok: boolean}) with a signed state;
                                answered with that state: "state-ok: confirmation <action>"
    test_input_required_result_multiple_inputs  asks "user_name" (form), "greeting" (sampling "Generate a
                                greeting", maxTokens 50) and "client_roots" in one round, signed state;
                                "All inputs received: name=<name>, greeting=<text>, roots=<n>"
    test_input_required_result_multi_round   asks "step1" (form {name}) with state round 1, then "step2"
                                (form {color}) with state round 2 carrying the name; "<name> likes <color>."
    test_input_required_result_tampered_state  asks "confirm" with a signed state; answered with that
                                state: "state-ok: state verified" (a changed state is the -32602 error)
    test_input_required_result_capabilities  asks only what the request declared: "sample" (sampling)
                                and/or "ask" (form {name}), signed state; "Capabilities respected: answered
                                <keys>"; "No input capability declared; nothing to ask." when neither is
Prompts:
    test_simple_prompt                    user text "This is a simple prompt for testing."
    test_prompt_with_arguments(arg1, arg2)  "Prompt with arguments: arg1='<arg1>', arg2='<arg2>'"
    test_prompt_with_embedded_resource(resourceUri)  a resource message (<resourceUri>, text/plain,
                                          "Embedded resource content for testing.") then the text
                                          "Please process the embedded resource above."
    test_prompt_with_image                the image, then "Please analyze the image above."
    test_input_required_result_prompt     asks "user_context" (form {context});
                                          "Use the following context: <context>"
Resources (subscribe/unsubscribe accept these URIs; any other URI is -32602 "Resource not found" with
data {"uri": <uri>}):
    test://static-text      text/plain "This is the content of the static text resource."
    test://static-binary    image/png, the image as a blob
    test://watched-resource text/plain "Watched resource content"
    template test://template/{id}/data  application/json {"id": "<id>", "templateTest": true,
                            "data": "Data for ID: <id>"}
Beyond the suite: update_watched_resource changes the watched resource (its text gains " (version
<n>)") and tells 2026-07-28 `subscriptions/listen` streams and the calling 2025-11-25 session, if it
subscribed, that it changed.
Completion: arg1 and arg2 of test_prompt_with_arguments and id of the template complete from fixed
lists, filtered by prefix.
"""

from __future__ import annotations

import json
import re
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, get_args

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.message import ServerMessageMetadata
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from console.demo.signing import invalid_state, seal, unseal
from console.listening import mcp_port, serve_mcp

SERVER_NAME = "everything-test"
SERVER_VERSION = "1.0.0"
STATE_KEY = b"everything-test-only-state-key-not-a-secret-0123456789"
STATE_PURPOSE = b"everything-state"
RETRY_INTERVAL_MS = 100
MAX_STORED_EVENTS = 10_000
MAX_INLINE_ROUNDS = 10
STEP_SECONDS = 0.05
LOG_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)  # least severe first

# A 1x1 red PNG and a WAV of four silent 16-bit mono samples at 8 kHz, generated for this server.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC"
WAV_BASE64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA=="

ToolResult = types.CallToolResult | types.InputRequiredResult
PromptResult = types.GetPromptResult | types.InputRequiredResult
R = TypeVar("R")


# --- state shared by the requests of this process ------------------------------------------


@dataclass
class Shared:
    """What the 2025-11-25 scenarios need kept between requests: the log level and subscriptions."""

    log_level: types.LoggingLevel = "info"
    subscriptions: set[str] = field(default_factory=set)
    watched_version: int = 0  # how often update_watched_resource changed the watched resource
    bus: InMemorySubscriptionBus = field(default_factory=InMemorySubscriptionBus)  # 2026-07-28 listens


class MemoryEventStore(EventStore):
    """The SSE events of the last MAX_STORED_EVENTS messages, so a 2025-11-25 client can resume."""

    def __init__(self) -> None:
        self._events: deque[tuple[EventId, StreamId, types.JSONRPCMessage | None]] = deque(
            maxlen=MAX_STORED_EVENTS
        )
        self._counter = 0

    async def store_event(self, stream_id: StreamId, message: types.JSONRPCMessage | None) -> EventId:
        self._counter += 1
        event_id = str(self._counter)
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        stream_id = next((stream for event, stream, _ in self._events if event == last_event_id), None)
        if stream_id is None:
            return None
        after = int(last_event_id)
        for event_id, stream, message in list(self._events):
            if stream == stream_id and int(event_id) > after and message is not None:  # None: priming event
                await send_callback(EventMessage(message, event_id))
        return stream_id


# --- one request as the handlers see it ----------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One tools/call or prompts/get attempt: arguments, answers so far and the verified state."""

    ctx: ServerRequestContext[Any]
    shared: Shared
    name: str
    arguments: Mapping[str, Any]
    responses: Mapping[str, types.InputResponse]
    state: Mapping[str, Any] | None

    @property
    def modern(self) -> bool:
        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def answer(self, key: str, kind: type[R]) -> R | None:
        response = self.responses.get(key)
        return response if isinstance(response, kind) else None

    def declined(self, key: str) -> str | None:
        """The action when form `key` was answered with decline or cancel."""
        answer = self.answer(key, types.ElicitResult)
        return answer.action if answer is not None and answer.action != "accept" else None

    def accepted(self, key: str, name: str) -> str | None:
        """The string field `name` of the accepted answer to form `key`, if there is one."""
        answer = self.answer(key, types.ElicitResult)
        if answer is None or answer.action != "accept":
            return None
        value = (answer.content or {}).get(name)
        return value if isinstance(value, str) else None

    def str_arg(self, name: str, default: str | None = None) -> str:
        value = self.arguments.get(name, default)
        if not isinstance(value, str):
            raise bad_argument(f"argument {name!r} must be a string")
        return value


def bad_argument(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message)


def seal_state(call: Call, fields: Mapping[str, Any]) -> str:
    return seal(STATE_KEY, {"for": call.name, **fields}, purpose=STATE_PURPOSE)


def open_state(name: str, token: str | None) -> dict[str, Any] | None:
    """The payload of a requestState this server issued for `name`; -32602 for anything else."""
    if token is None:
        return None
    try:
        payload = unseal(STATE_KEY, token, purpose=STATE_PURPOSE)
    except ValueError:
        raise invalid_state("failed its integrity check") from None
    if payload.get("for") != name:
        raise invalid_state(f"not issued for {name}")
    return payload


def declared(call: Call, capability: str) -> bool:
    capabilities = call.ctx.session.client_capabilities
    return capabilities is not None and getattr(capabilities, capability) is not None


def require(call: Call, capability: str) -> None:
    if not declared(call, capability):
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"This request needs the client {capability!r} capability",
            data={"requiredCapabilities": {capability: {}}},
        )


def _capability_for(request: types.InputRequest) -> str:
    if isinstance(request, types.ElicitRequest):
        return "elicitation"
    if isinstance(request, types.CreateMessageRequest):
        return "sampling"
    return "roots"


def ask(
    call: Call, requests: Mapping[str, types.InputRequest], state: Mapping[str, Any] | None = None
) -> types.InputRequiredResult:
    """An `input_required` result for `requests`, after checking the client declared what they need."""
    for request in requests.values():
        require(call, _capability_for(request))
    token = None if state is None else seal_state(call, state)
    return types.InputRequiredResult(input_requests=dict(requests), request_state=token)


# --- small builders -----------------------------------------------------------------------


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def text_result(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[text(value)])


def stopped(key: str, action: str) -> types.CallToolResult:
    return text_result(f"stopped at {key}: {action}")


def image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")


def embedded(uri: str, mime_type: str, body: str) -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=body)
    return types.EmbeddedResource(type="resource", resource=contents)


def form(message: str, properties: dict[str, Any], required: Sequence[str] = ()) -> types.ElicitRequest:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))


def name_form(message: str = "What is your name?") -> types.ElicitRequest:
    return form(message, {"name": {"type": "string"}}, ["name"])


def confirm_form() -> types.ElicitRequest:
    return form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])


def sampling(prompt: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=text(prompt))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def sampled_text(reply: types.CreateMessageResult) -> str:
    return reply.content.text if isinstance(reply.content, types.TextContent) else f"<{reply.content.type}>"


def elicitation_summary(answer: types.ElicitResult) -> str:
    return f"action={answer.action}, content={json.dumps(answer.content or {})}"


# --- content tools ------------------------------------------------------------------------


async def test_simple_text(call: Call) -> ToolResult:
    return text_result("This is a simple text response for testing.")


async def test_image_content(call: Call) -> ToolResult:
    return types.CallToolResult(content=[image()])


async def test_audio_content(call: Call) -> ToolResult:
    return types.CallToolResult(
        content=[types.AudioContent(type="audio", data=WAV_BASE64, mime_type="audio/wav")]
    )


async def test_embedded_resource(call: Call) -> ToolResult:
    resource = embedded("test://embedded-resource", "text/plain", "This is an embedded resource content.")
    return types.CallToolResult(content=[resource])


async def test_multiple_content_types(call: Call) -> ToolResult:
    resource = embedded(
        "test://mixed-content-resource", "application/json", json.dumps({"test": "data", "value": 123})
    )
    return types.CallToolResult(content=[text("Multiple content types test:"), image(), resource])


async def test_error_handling(call: Call) -> ToolResult:
    return types.CallToolResult(
        content=[text("This tool intentionally returns an error for testing")], is_error=True
    )


async def json_schema_2020_12_tool(call: Call) -> ToolResult:
    return text_result("json_schema_2020_12_tool")


async def test_x_mcp_header(call: Call) -> ToolResult:
    return text_result(f"region={call.str_arg('region', '<none>')}")


# --- notification tools -------------------------------------------------------------------


def may_log(call: Call, level: types.LoggingLevel) -> bool:
    """2026-07-28: only at or above the request's `_meta` log level; 2025-11-25: logging/setLevel's."""
    threshold = (call.ctx.meta or {}).get(types.LOG_LEVEL_META_KEY) if call.modern else call.shared.log_level
    return threshold in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)


async def log(call: Call, level: types.LoggingLevel, message: str) -> None:
    if not may_log(call, level):
        return
    notification = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=level, data=message, logger=SERVER_NAME)
    )
    await call.ctx.session.send_notification(notification, related_request_id=call.ctx.request_id)


async def test_tool_with_logging(call: Call) -> ToolResult:
    await log(call, "info", "Tool execution started")
    await anyio.sleep(STEP_SECONDS)
    await log(call, "info", "Tool processing data")
    await anyio.sleep(STEP_SECONDS)
    await log(call, "info", "Tool execution completed")
    return text_result("Tool with logging executed successfully")


async def test_tool_with_progress(call: Call) -> ToolResult:
    steps = (0, 50, 100)
    for step in steps:
        if step:
            await anyio.sleep(STEP_SECONDS)
        await call.ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
    return text_result(f"Progress reported: {', '.join(map(str, steps))} of 100")


async def test_logging_tool(call: Call) -> ToolResult:
    await log(call, "info", "test_logging_tool ran")
    return text_result("Logged one info message.")


async def update_watched_resource(call: Call) -> ToolResult:
    """Beyond the suite: a change to subscribe to, told to 2026-07-28 listen streams and to this
    2025-11-25 session if it subscribed."""
    call.shared.watched_version += 1
    await call.shared.bus.publish(ResourceUpdated(WATCHED_URI))
    if not call.modern and WATCHED_URI in call.shared.subscriptions:
        await call.ctx.session.send_resource_updated(WATCHED_URI)
    return text_result(f"The watched resource is now version {call.shared.watched_version}.")


async def test_reconnection(call: Call) -> ToolResult:
    close = call.ctx.close_sse_stream  # only on 2025-11-25 connections served with an event store
    if close is not None:
        await close()
        await anyio.sleep(2 * STEP_SECONDS)
    return text_result("Reconnection test completed")


# --- question tools -----------------------------------------------------------------------

ELICITATION_PROPERTIES = {
    "username": {"type": "string", "description": "User's response"},
    "email": {"type": "string", "description": "User's email address"},
}
DEFAULTS_PROPERTIES = {
    "name": {"type": "string", "description": "User name", "default": "John Doe"},
    "age": {"type": "integer", "description": "User age", "default": 30},
    "score": {"type": "number", "description": "User score", "default": 95.5},
    "status": {
        "type": "string",
        "description": "User status",
        "enum": ["active", "inactive", "pending"],
        "default": "active",
    },
    "verified": {"type": "boolean", "description": "Verification status", "default": True},
}


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


ENUM_PROPERTIES = {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {
        "type": "string",
        "oneOf": _titled(("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")),
    },
    "legacyEnum": {
        "type": "string",
        "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"],
    },
    "untitledMulti": {
        "type": "array",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
    },
    "titledMulti": {
        "type": "array",
        "items": {
            "anyOf": _titled(
                ("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")
            )
        },
    },
}


def one_form(
    call: Call, key: str, question: types.ElicitRequest, reply: Callable[[types.ElicitResult], str]
) -> ToolResult:
    answer = call.answer(key, types.ElicitResult)
    return ask(call, {key: question}) if answer is None else text_result(reply(answer))


async def test_sampling(call: Call) -> ToolResult:
    reply = call.answer("reply", types.CreateMessageResult)
    if reply is None:
        return ask(call, {"reply": sampling(call.str_arg("prompt"), 100)})
    return text_result(f"LLM response: {sampled_text(reply)}")


async def test_elicitation(call: Call) -> ToolResult:
    question = form(call.str_arg("message"), ELICITATION_PROPERTIES, ["username", "email"])
    return one_form(call, "response", question, lambda a: f"User response: {elicitation_summary(a)}")


async def test_elicitation_sep1034_defaults(call: Call) -> ToolResult:
    question = form("Please provide user information", DEFAULTS_PROPERTIES)
    return one_form(call, "user_info", question, lambda a: f"Elicitation completed: {elicitation_summary(a)}")


async def test_elicitation_sep1330_enums(call: Call) -> ToolResult:
    question = form("Please pick values from each kind of enum", ENUM_PROPERTIES)
    return one_form(call, "choices", question, lambda a: f"Elicitation completed: {elicitation_summary(a)}")


async def test_streaming_elicitation(call: Call) -> ToolResult:
    question = form("Continue?", {"confirmed": {"type": "boolean"}})
    return one_form(call, "continue", question, lambda a: f"Streaming elicitation answered: {a.action}")


async def test_missing_capability(call: Call) -> ToolResult:
    require(call, "sampling")
    return text_result("Client declared sampling capability; proceeding.")


# --- input_required fixtures --------------------------------------------------------------


async def test_input_required_result_elicitation(call: Call) -> ToolResult:
    if (action := call.declined("user_name")) is not None:
        return stopped("user_name", action)
    name = call.accepted("user_name", "name")
    return ask(call, {"user_name": name_form()}) if name is None else text_result(f"Hello, {name}!")


async def test_input_required_result_sampling(call: Call) -> ToolResult:
    reply = call.answer("capital_question", types.CreateMessageResult)
    if reply is None:
        return ask(call, {"capital_question": sampling("What is the capital of France?", 100)})
    return text_result(f"Model said: {sampled_text(reply)}")


async def test_input_required_result_list_roots(call: Call) -> ToolResult:
    roots = call.answer("client_roots", types.ListRootsResult)
    if roots is None:
        return ask(call, {"client_roots": types.ListRootsRequest()})
    return text_result(f"Client exposed {len(roots.roots)} root(s).")


def _confirm_with_state(call: Call, done: Callable[[types.ElicitResult], str]) -> ToolResult:
    answer = call.answer("confirm", types.ElicitResult)
    if answer is None or call.state is None:
        return ask(call, {"confirm": confirm_form()}, {"step": "confirm"})
    return text_result(done(answer))


async def test_input_required_result_request_state(call: Call) -> ToolResult:
    return _confirm_with_state(call, lambda a: f"state-ok: confirmation {a.action}")


async def test_input_required_result_tampered_state(call: Call) -> ToolResult:
    return _confirm_with_state(call, lambda a: "state-ok: state verified")


async def test_input_required_result_multiple_inputs(call: Call) -> ToolResult:
    name = call.accepted("user_name", "name")
    greeting = call.answer("greeting", types.CreateMessageResult)
    roots = call.answer("client_roots", types.ListRootsResult)
    if name is None or greeting is None or roots is None or call.state is None:
        requests: dict[str, types.InputRequest] = {
            "user_name": name_form(),
            "greeting": sampling("Generate a greeting", 50),
            "client_roots": types.ListRootsRequest(),
        }
        return ask(call, requests, {"step": "all"})
    return text_result(
        f"All inputs received: name={name}, greeting={sampled_text(greeting)}, roots={len(roots.roots)}"
    )


def _ask_step1(call: Call) -> ToolResult:
    return ask(call, {"step1": name_form("Step 1: What is your name?")}, {"round": 1})


def _ask_step2(call: Call, name: str) -> ToolResult:
    question = form("Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])
    return ask(call, {"step2": question}, {"round": 2, "name": name})


def _multi_round_after_step1(call: Call) -> ToolResult:
    if (action := call.declined("step1")) is not None:
        return stopped("step1", action)
    name = call.accepted("step1", "name")
    return _ask_step1(call) if name is None else _ask_step2(call, name)


def _multi_round_after_step2(call: Call, name: str) -> ToolResult:
    if (action := call.declined("step2")) is not None:
        return stopped("step2", action)
    color = call.accepted("step2", "color")
    return _ask_step2(call, name) if color is None else text_result(f"{name} likes {color}.")


async def test_input_required_result_multi_round(call: Call) -> ToolResult:
    state = call.state or {}
    if state.get("round") == 2:
        return _multi_round_after_step2(call, str(state.get("name")))
    if state.get("round") == 1:
        return _multi_round_after_step1(call)
    return _ask_step1(call)


async def test_input_required_result_capabilities(call: Call) -> ToolResult:
    wanted: dict[str, types.InputRequest] = {}
    if declared(call, "sampling"):
        wanted["sample"] = sampling("Say hello", 50)
    if declared(call, "elicitation"):
        wanted["ask"] = name_form()
    if not wanted:
        return text_result("No input capability declared; nothing to ask.")
    if call.state is None or not all(key in call.responses for key in wanted):
        return ask(call, wanted, {"step": "capability-gated"})
    return text_result(f"Capabilities respected: answered {', '.join(wanted)}")


# --- tool table ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    tool: types.Tool
    run: Callable[[Call], Awaitable[ToolResult]]


def _schema(properties: dict[str, Any] | None = None, required: Sequence[str] = ()) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        schema["required"] = list(required)
    return schema


STRING = {"type": "string"}
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": STRING, "city": STRING},
        }
    },
    "properties": {
        "name": STRING,
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": STRING,
        "email": STRING,
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
REGION = {
    "type": "string",
    "description": "Mirrored into the Mcp-Param-Region header",
    "x-mcp-header": "Region",
}


def _spec(
    run: Callable[[Call], Awaitable[ToolResult]], description: str, schema: dict[str, Any] | None = None
) -> ToolSpec:
    tool = types.Tool(name=run.__name__, description=description, input_schema=schema or _schema())
    return ToolSpec(tool=tool, run=run)


TOOLS: dict[str, ToolSpec] = {
    spec.tool.name: spec
    for spec in (
        _spec(test_simple_text, "Returns one text item."),
        _spec(test_image_content, "Returns one PNG image."),
        _spec(test_audio_content, "Returns one WAV clip."),
        _spec(test_embedded_resource, "Returns one embedded text resource."),
        _spec(test_multiple_content_types, "Returns text, an image and an embedded resource."),
        _spec(test_error_handling, "Always returns an isError result."),
        _spec(json_schema_2020_12_tool, "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12),
        _spec(
            test_x_mcp_header,
            "Echoes `region`, which is mirrored into a header.",
            _schema({"region": REGION}),
        ),
        _spec(test_tool_with_logging, "Logs three info messages while it runs."),
        _spec(test_tool_with_progress, "Reports progress 0, 50 and 100 of 100."),
        _spec(test_logging_tool, "Logs one info message (only when the request asked for logs)."),
        _spec(test_reconnection, "Closes its SSE stream before answering, so the client must resume."),
        _spec(update_watched_resource, "Changes test://watched-resource and tells its subscribers."),
        _spec(test_sampling, "Asks the client to sample `prompt`.", _schema({"prompt": STRING}, ["prompt"])),
        _spec(
            test_elicitation,
            "Asks the user for a username and an email.",
            _schema({"message": STRING}, ["message"]),
        ),
        _spec(test_elicitation_sep1034_defaults, "Asks a form whose fields all have defaults."),
        _spec(test_elicitation_sep1330_enums, "Asks a form with every kind of enum field."),
        _spec(test_streaming_elicitation, "Asks one yes/no question."),
        _spec(test_missing_capability, "Fails with -32021 unless the client declared sampling."),
        _spec(test_input_required_result_elicitation, "input_required: one form question, no state."),
        _spec(test_input_required_result_sampling, "input_required: one sampling request, no state."),
        _spec(test_input_required_result_list_roots, "input_required: one roots/list request, no state."),
        _spec(test_input_required_result_request_state, "input_required: one question with a signed state."),
        _spec(
            test_input_required_result_multiple_inputs,
            "input_required: form, sampling and roots in one round.",
        ),
        _spec(
            test_input_required_result_multi_round,
            "input_required: two rounds, the state changes each round.",
        ),
        _spec(
            test_input_required_result_tampered_state,
            "input_required: rejects a requestState it did not sign.",
        ),
        _spec(test_input_required_result_capabilities, "input_required: asks only what the client declared."),
    )
}


def tool_input_schema(name: str) -> Mapping[str, Any] | None:
    spec = TOOLS.get(name)
    return None if spec is None else spec.tool.input_schema


# --- prompts ------------------------------------------------------------------------------


def prompt_result(*contents: types.ContentBlock) -> types.GetPromptResult:
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=c) for c in contents])


async def test_simple_prompt(call: Call) -> PromptResult:
    return prompt_result(text("This is a simple prompt for testing."))


async def test_prompt_with_arguments(call: Call) -> PromptResult:
    arg1, arg2 = call.str_arg("arg1"), call.str_arg("arg2")
    return prompt_result(text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))


async def test_prompt_with_embedded_resource(call: Call) -> PromptResult:
    resource = embedded(call.str_arg("resourceUri"), "text/plain", "Embedded resource content for testing.")
    return prompt_result(resource, text("Please process the embedded resource above."))


async def test_prompt_with_image(call: Call) -> PromptResult:
    return prompt_result(image(), text("Please analyze the image above."))


async def test_input_required_result_prompt(call: Call) -> PromptResult:
    if (action := call.declined("user_context")) is not None:
        return prompt_result(text(f"stopped at user_context: {action}"))
    context = call.accepted("user_context", "context")
    if context is None:
        question = form("What context should the prompt use?", {"context": STRING}, ["context"])
        return ask(call, {"user_context": question})
    return prompt_result(text(f"Use the following context: {context}"))


@dataclass(frozen=True)
class PromptSpec:
    prompt: types.Prompt
    run: Callable[[Call], Awaitable[PromptResult]]


def _prompt(run: Callable[[Call], Awaitable[PromptResult]], description: str, *arguments: str) -> PromptSpec:
    args = [types.PromptArgument(name=a, description=f"The {a} argument", required=True) for a in arguments]
    return PromptSpec(types.Prompt(name=run.__name__, description=description, arguments=args or None), run)


PROMPTS: dict[str, PromptSpec] = {
    spec.prompt.name: spec
    for spec in (
        _prompt(test_simple_prompt, "A prompt without arguments."),
        _prompt(test_prompt_with_arguments, "A prompt with two required arguments.", "arg1", "arg2"),
        _prompt(test_prompt_with_embedded_resource, "A prompt that embeds a resource.", "resourceUri"),
        _prompt(test_prompt_with_image, "A prompt with an image."),
        _prompt(test_input_required_result_prompt, "input_required: asks for the context first."),
    )
}


# --- resources and completion -------------------------------------------------------------

TEXT_URI = "test://static-text"
BINARY_URI = "test://static-binary"
WATCHED_URI = "test://watched-resource"
TEMPLATE = "test://template/{id}/data"
TEMPLATE_PATTERN = re.compile(r"test://template/([^/]+)/data")

RESOURCES = [
    types.Resource(
        uri=TEXT_URI, name="static-text", description="A static text resource.", mime_type="text/plain"
    ),
    types.Resource(
        uri=BINARY_URI, name="static-binary", description="A static PNG image.", mime_type="image/png"
    ),
    types.Resource(
        uri=WATCHED_URI,
        name="watched-resource",
        description="A resource to subscribe to.",
        mime_type="text/plain",
    ),
]
RESOURCE_TEMPLATES = [
    types.ResourceTemplate(
        uri_template=TEMPLATE,
        name="template",
        description="JSON data for an id.",
        mime_type="application/json",
    )
]
COMPLETIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("test_prompt_with_arguments", "arg1"): ("paris", "park", "party"),
    ("test_prompt_with_arguments", "arg2"): ("world", "wonder", "work"),
    (TEMPLATE, "id"): ("100", "123", "200"),
}


def resource_not_found(uri: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


def _text_contents(uri: str, mime_type: str, body: str) -> types.TextResourceContents:
    return types.TextResourceContents(uri=uri, mime_type=mime_type, text=body)


def resource_contents(
    uri: str, watched_version: int = 0
) -> types.TextResourceContents | types.BlobResourceContents:
    if uri == TEXT_URI:
        return _text_contents(uri, "text/plain", "This is the content of the static text resource.")
    if uri == BINARY_URI:
        return types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_BASE64)
    if uri == WATCHED_URI:
        version = f" (version {watched_version})" if watched_version else ""
        return _text_contents(uri, "text/plain", f"Watched resource content{version}")
    match = TEMPLATE_PATTERN.fullmatch(uri)
    if match is None:
        raise resource_not_found(uri)
    item = match.group(1)
    body = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
    return _text_contents(uri, "application/json", body)


def complete(params: types.CompleteRequestParams) -> types.Completion:
    ref = params.ref.name if isinstance(params.ref, types.PromptReference) else params.ref.uri
    candidates = COMPLETIONS.get((ref, params.argument.name), ())
    values = [value for value in candidates if value.startswith(params.argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


# --- asking the 2025-11-25 way ------------------------------------------------------------


async def push(ctx: ServerRequestContext[Any], request: types.InputRequest) -> types.InputResponse:
    """Send one input request to the client within the current request and wait for its answer."""
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    if isinstance(request, types.ElicitRequest):
        return await ctx.session.send_request(request, types.ElicitResult, metadata=related)
    if isinstance(request, types.CreateMessageRequest):
        return await ctx.session.send_request(request, types.CreateMessageResult, metadata=related)
    return await ctx.session.send_request(request, types.ListRootsResult, metadata=related)


async def _answer_inline(call: Call, pending: types.InputRequiredResult) -> Call:
    requests = pending.input_requests or {}
    responses = {key: await push(call.ctx, request) for key, request in requests.items()}
    return replace(call, responses=responses, state=open_state(call.name, pending.request_state))


async def resolve(
    call: Call, run: Callable[[Call], Awaitable[R | types.InputRequiredResult]]
) -> R | types.InputRequiredResult:
    """Run a handler; on 2025-11-25 answer its questions by pushing them until it completes."""
    result = await run(call)
    rounds = 0
    while isinstance(result, types.InputRequiredResult) and not call.modern:
        rounds += 1
        if rounds > MAX_INLINE_ROUNDS:
            raise MCPError(
                code=types.INTERNAL_ERROR, message=f"{call.name} asked more than {MAX_INLINE_ROUNDS} rounds"
            )
        call = await _answer_inline(call, result)
        result = await run(call)
    return result


# --- server -------------------------------------------------------------------------------


def _call(
    ctx: ServerRequestContext[Any],
    shared: Shared,
    name: str,
    arguments: Mapping[str, Any] | None,
    params: types.InputResponseRequestParams,
) -> Call:
    return Call(
        ctx=ctx,
        shared=shared,
        name=name,
        arguments=arguments or {},
        responses=params.input_responses or {},
        state=open_state(name, params.request_state),
    )


def _known_resource(uri: str) -> str:
    resource_contents(uri)  # raises resource_not_found for anything else
    return uri


def build_server(shared: Shared) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[spec.tool for spec in TOOLS.values()])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> ToolResult:
        spec = TOOLS.get(params.name)
        if spec is None:
            raise bad_argument(f"Unknown tool: {params.name}")
        return await resolve(_call(ctx, shared, params.name, params.arguments, params), spec.run)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[spec.prompt for spec in PROMPTS.values()])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> PromptResult:
        spec = PROMPTS.get(params.name)
        if spec is None:
            raise bad_argument(f"Unknown prompt: {params.name}")
        return await resolve(_call(ctx, shared, params.name, params.arguments, params), spec.run)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=RESOURCES)

    async def list_resource_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=RESOURCE_TEMPLATES)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return types.ReadResourceResult(contents=[resource_contents(params.uri, shared.watched_version)])

    async def subscribe(
        ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        shared.subscriptions.add(_known_resource(params.uri))
        return types.EmptyResult()

    async def unsubscribe(
        ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        shared.subscriptions.discard(params.uri)
        return types.EmptyResult()

    async def completion(
        ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return types.CompleteResult(completion=complete(params))

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        shared.log_level = params.level
        return types.EmptyResult()

    server: Server[Any] = Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        get_tool_input_schema=tool_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_completion=completion,
        on_subscriptions_listen=ListenHandler(shared.bus),
    )
    # Registered directly: the on_set_logging_level keyword warns that logging is deprecated in 2026-07-28.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="Conformance 'everything' test MCP server.")
    # A 2025-11-25 client may resume a broken stream; the retry field says when.
    serve_mcp(build_server(Shared()), port, event_store=MemoryEventStore(), retry_interval=RETRY_INTERVAL_MS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
