"""The connect demo's MCP server: the `create_issue` tool, which needs the caller's tracker account.

Every request is for the MCP user its bearer token names; a caller without a connection gets a URL-mode
question that links this server's own connect page.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request

from console.demo.connect.config import CONNECT_PATH, SERVER_NAME, TRACKER, Config, Flow, Store, User
from console.demo.connect.state import ConnectState, new_flow_id, sign_state, verify_state

SERVER_VERSION = "1.0.0"
QUESTION_KEY = "connect"
QUESTION_MESSAGE = "Connect your Example Tracker account so the agent can create issues for you."

CREATE_ISSUE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string", "description": "Title of the issue"}},
    "required": ["title"],
}


# --- who is calling -----------------------------------------------------------------------


def bearer_token(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def mcp_user(config: Config, ctx: ServerRequestContext[Any]) -> User:
    """The MCP user of this request, from the bearer token of the HTTP request behind it."""
    request = ctx.request
    token = bearer_token(request.headers) if isinstance(request, Request) else None
    user = config.user_by_token(token) if token else None
    if user is None:
        # The HTTP layer already answers 401 to these; this is the handler's own check.
        raise MCPError(code=types.INVALID_REQUEST, message="unauthenticated: no valid bearer token")
    return user


def base_url(config: Config, ctx: ServerRequestContext[Any]) -> str:
    """This server's external base URL: --public-url, else what the MCP client used to reach us."""
    if config.public_url is not None:
        return config.public_url
    request = ctx.request
    if not isinstance(request, Request):
        raise MCPError(code=types.INTERNAL_ERROR, message="no HTTP request to derive the server's URL from")
    return str(request.base_url).rstrip("/")


# --- the create_issue tool ----------------------------------------------------------------


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def connect_url(base: str, flow_id: str) -> str:
    return f"{base}{CONNECT_PATH}?{urlencode({'flow': flow_id})}"


def ask_to_connect(
    config: Config, store: Store, user: str, flow_id: str, base: str
) -> types.InputRequiredResult:
    exp = time.time() + config.ttl_seconds
    # (Re-)register the flow: after a restart a still-valid state brings its flow back.
    store.flows[flow_id] = Flow(user=user, exp=exp)
    question = types.ElicitRequest(
        params=types.ElicitRequestURLParams(message=QUESTION_MESSAGE, url=connect_url(base, flow_id))
    )
    return types.InputRequiredResult(
        input_requests={QUESTION_KEY: question},
        request_state=sign_state(config.key, ConnectState(user=user, flow=flow_id, exp=exp)),
    )


def title_argument(arguments: Mapping[str, Any] | None) -> str:
    title = (arguments or {}).get("title")
    if not isinstance(title, str) or not title.strip():
        raise MCPError(code=types.INVALID_PARAMS, message="argument 'title' must be a non-empty string")
    return title


def connect_answer(params: types.CallToolRequestParams) -> types.ElicitResult | None:
    answer = (params.input_responses or {}).get(QUESTION_KEY)
    return answer if isinstance(answer, types.ElicitResult) else None


def create_issue(
    config: Config, store: Store, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult | types.InputRequiredResult:
    user = mcp_user(config, ctx)
    title = title_argument(params.arguments)
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return text_result(
            "create_issue needs a client that speaks MCP 2026-07-28 (multi round-trip requests).",
            is_error=True,
        )
    if params.request_state is None:
        if user.name in store.connections:
            return text_result(f"Issue created for {user.name}: {title}")
        return ask_to_connect(config, store, user.name, new_flow_id(config.key), base_url(config, ctx))
    # The state is checked before anything else: a forged or foreign state is always rejected.
    state = verify_state(config, params.request_state, user.name)
    answer = connect_answer(params)
    if answer is not None and answer.action != "accept":
        return text_result(f"Not connected ({answer.action}).")
    if user.name in store.connections:
        return text_result(f"Issue created for {user.name}: {title}")
    # Accepted (the person agreed to open the link) but not finished yet, or no answer: ask again
    # with the identical URL, so the client recognises the question it already has consent for.
    return ask_to_connect(config, store, user.name, state.flow, base_url(config, ctx))


def build_server(config: Config, store: Store) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        mcp_user(config, ctx)
        tool = types.Tool(
            name="create_issue",
            description=(
                f"Create an issue in the {TRACKER} for the calling user. The first time, the user "
                "is asked to connect their tracker account in the browser."
            ),
            input_schema=CREATE_ISSUE_INPUT_SCHEMA,
        )
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != "create_issue":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return create_issue(config, store, ctx, params)

    return Server(SERVER_NAME, version=SERVER_VERSION, on_list_tools=list_tools, on_call_tool=call_tool)
