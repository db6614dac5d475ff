"""Demo MCP server "connect": a `create_issue` tool that needs a third-party account, linked via URL mode.

One process serves two things on one port:

* the MCP endpoint `/mcp` (Streamable HTTP, protocol 2026-07-28, low-level `mcp.server.Server`), and
* stand-in pages of a third party, the "Example Tracker", under `/connect/...`, where a person
  signs in with the tracker's own password and so links their tracker account to their MCP user.

Every MCP request must carry `Authorization: Bearer <token>`; the token says which MCP user the
call is for (a request without a known token gets HTTP 401 before it reaches the MCP layer). Inside
the tool handler the user is read again from the HTTP request the SDK attaches to the request
context (`ctx.request`, a Starlette `Request`, on Streamable HTTP), so a handler never acts without
an identified user.

`create_issue(title)`:

* If the MCP user has a stored connection: `Issue created for <user>: <title>`.
* Otherwise it answers `input_required` with one URL-mode elicitation (key "connect") whose URL is
  this server's own `/connect/start?flow=<flow id>` page, plus a signed requestState that binds
  the user, the flow id and an expiry. The flow (flow id -> user) is remembered in memory.
* On the retry: a bad, foreign (another user's) or expired state -> JSON-RPC error -32602 with
  data {"reason": "invalid_request_state"}; decline/cancel -> "Not connected (decline)." /
  "Not connected (cancel)."; accept (the person only agreed to open the link) -> the issue if the
  connection now exists, else the same question again with the IDENTICAL URL (same flow id), so a
  client can tell it is the question it already got consent for.

The connect page enforces the protocol's same-user rule itself: the tracker user who signs in must
be the MCP user whose call created the flow; anyone else gets 403 ("This connect link was made for
another user.") and nothing is recorded. Flow ids carry an HMAC tag, so a guessed or edited link is
refused before any lookup. The link holds no user data.

Every request to a `/connect` path is counted, and `GET /stats` returns
`{"connect_requests": n, "connections": [users]}`, so tests can check that a client never fetched
the link on its own.

All state (flows, connections, counters) lives in memory: this is a demo, a restart forgets every
connection. A requestState issued before a restart still verifies (it is signed, not stored), and
its flow is re-registered for the user it names.

Run:
    CONNECT_STATE_KEY=<32+ characters> \\
    CONNECT_USERS='dev:tok-dev-123:pw-dev,lead:tok-lead-456:pw-lead' \\
        python -m console.demo.connect --port 8766

The server binds 127.0.0.1 unless `--host` says otherwise (port 0 picks a free port) and, once it
accepts connections, prints exactly one line to stdout: `listening on http://<host>:<port>/mcp`.
Links point at the host and port the MCP client used (its Host header), or at `--public-url`
(e.g. `https://tracker-demo.example`) when the server sits behind a proxy. When bound to a loopback
address, the SDK's DNS-rebinding check admits only loopback Host headers (plus `--public-url`'s).

Environment:
    CONNECT_STATE_KEY   HMAC key for requestState and for connect-link flow ids, at least 32
                        characters; without it the server refuses to start (exit status 2).
    CONNECT_USERS       comma-separated `name:token:password` triples: the MCP bearer token that
                        identifies `name`, and the password `name` signs in with on the connect page.
                        Required (exit status 2 if missing or malformed).
    CONNECT_STATE_TTL   seconds an issued requestState / flow stays valid (default 3600).
"""

from __future__ import annotations

import argparse
import hmac
import html
import ipaddress
import math
import os
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from console.demo.signing import b64decode_canonical, b64encode, invalid_state, mac, seal, unseal
from console.listening import serve_and_announce

SERVER_NAME = "connect-demo"
SERVER_VERSION = "1.0.0"
TRACKER = "Example Tracker"
MIN_KEY_LENGTH = 32
DEFAULT_TTL_SECONDS = 3600.0
QUESTION_KEY = "connect"
QUESTION_MESSAGE = "Connect your Example Tracker account so the agent can create issues for you."
CONNECT_PATH = "/connect/start"
MCP_PATH = "/mcp"
FLOW_TAG_BYTES = 16
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

CREATE_ISSUE_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string", "description": "Title of the issue"}},
    "required": ["title"],
}


class ConfigError(Exception):
    """The environment does not allow the server to start."""


@dataclass(frozen=True)
class User:
    name: str
    token: str
    password: str


@dataclass(frozen=True)
class Config:
    key: bytes
    users: tuple[User, ...]
    ttl_seconds: float
    public_url: str | None = None

    def user_by_token(self, token: str) -> User | None:
        found = None
        for user in self.users:  # compare against every token, so timing says nothing about which
            if hmac.compare_digest(user.token.encode(), token.encode()):
                found = user
        return found

    def sign_in(self, name: str, password: str) -> User | None:
        found = None
        for user in self.users:
            name_ok = hmac.compare_digest(user.name.encode(), name.encode())
            password_ok = hmac.compare_digest(user.password.encode(), password.encode())
            if name_ok and password_ok:
                found = user
        return found


@dataclass
class Flow:
    user: str
    exp: float


@dataclass
class Store:
    """Everything the demo remembers, in memory only."""

    flows: dict[str, Flow] = field(default_factory=dict)
    connections: set[str] = field(default_factory=set)
    connect_requests: int = 0


@dataclass(frozen=True)
class ConnectState:
    user: str
    flow: str
    exp: float


def parse_users(raw: str) -> tuple[User, ...]:
    users: list[User] = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        name, _, rest = entry.partition(":")
        token, _, password = rest.partition(":")
        name, token = name.strip(), token.strip()
        if not (name and token and password):
            raise ConfigError("CONNECT_USERS entries must look like name:token:password")
        users.append(User(name=name, token=token, password=password))
    if not users:
        raise ConfigError("CONNECT_USERS must name at least one user as name:token:password")
    if len({u.name for u in users}) != len(users) or len({u.token for u in users}) != len(users):
        raise ConfigError("CONNECT_USERS must not repeat a user name or a token")
    return tuple(users)


def parse_public_url(raw: str | None) -> str | None:
    if raw is None:
        return None
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"--public-url must be an http(s) base URL, got {raw!r}")
    return raw.strip().rstrip("/")


def load_config(env: Mapping[str, str], public_url: str | None = None) -> Config:
    key = env.get("CONNECT_STATE_KEY", "")
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(f"CONNECT_STATE_KEY must be set and at least {MIN_KEY_LENGTH} characters long")
    users = parse_users(env.get("CONNECT_USERS", ""))
    raw_ttl = env.get("CONNECT_STATE_TTL", "").strip()
    try:
        ttl = float(raw_ttl) if raw_ttl else DEFAULT_TTL_SECONDS
    except ValueError:
        raise ConfigError(f"CONNECT_STATE_TTL must be a number of seconds, got {raw_ttl!r}") from None
    if not math.isfinite(ttl) or ttl <= 0:
        raise ConfigError("CONNECT_STATE_TTL must be a positive, finite number of seconds")
    return Config(key=key.encode(), users=users, ttl_seconds=ttl, public_url=parse_public_url(public_url))


# --- signing: requestState and flow ids, via console.demo.signing -------------------------


def new_flow_id(key: bytes) -> str:
    nonce = b64encode(secrets.token_bytes(16))
    return f"{nonce}.{b64encode(mac(key, nonce.encode(), purpose=b'flow')[:FLOW_TAG_BYTES])}"


def flow_id_is_genuine(key: bytes, flow_id: str) -> bool:
    nonce, sep, tag = flow_id.partition(".")
    if not sep or not nonce or len(flow_id) > 200:
        return False
    try:
        given = b64decode_canonical(tag)
    except ValueError:
        return False
    return hmac.compare_digest(given, mac(key, nonce.encode(), purpose=b"flow")[:FLOW_TAG_BYTES])


def sign_state(key: bytes, state: ConnectState) -> str:
    # The purpose prefix keeps a flow tag from ever verifying as a state signature and vice versa.
    return seal(key, {"user": state.user, "flow": state.flow, "exp": state.exp}, purpose=b"state")


def _open_state(key: bytes, token: str) -> ConnectState:
    """Return the signed state, or raise ValueError if the token was not made with `key`."""
    data = unseal(key, token, purpose=b"state")
    user, flow, exp = data.get("user"), data.get("flow"), data.get("exp")
    if not (isinstance(user, str) and isinstance(flow, str) and isinstance(exp, int | float)):
        raise ValueError("unexpected payload")
    return ConnectState(user=user, flow=flow, exp=float(exp))


def verify_state(config: Config, token: str, user: str) -> ConnectState:
    try:
        state = _open_state(config.key, token)
    except ValueError:
        raise invalid_state("tampered") from None
    if not hmac.compare_digest(state.user.encode(), user.encode()):
        raise invalid_state("foreign")
    if time.time() >= state.exp:
        raise invalid_state("expired")
    return state


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


# --- the stand-in third-party pages -------------------------------------------------------

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def page(title: str, body: str, status_code: int = 200) -> HTMLResponse:
    """A whole HTML page; `body` must already be escaped markup."""
    document = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)} · {TRACKER}</title>"
        "<style>body{font-family:sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}"
        "label{display:block;margin:.8rem 0}input{display:block;width:100%}</style></head>"
        f"<body><h1>{html.escape(TRACKER)}</h1>\n{body}\n</body></html>\n"
    )
    return HTMLResponse(document, status_code=status_code, headers=PAGE_HEADERS)


def sign_in_form(flow_id: str, error: str | None = None) -> str:
    notice = f'<p role="alert"><strong>{html.escape(error)}</strong></p>' if error else ""
    return (
        "<h2>Sign in to connect your account</h2>\n"
        "<p>An agent asks to create issues in the Example Tracker on your behalf. Sign in with "
        "your Example Tracker account to allow it.</p>\n"
        f"{notice}\n"
        f'<form method="post" action="{CONNECT_PATH}">'
        f'<input type="hidden" name="flow" value="{html.escape(flow_id)}">'
        '<label>User name <input name="username" autocomplete="username" required></label>'
        '<label>Password <input name="password" type="password" autocomplete="current-password" '
        "required></label>"
        '<button type="submit">Sign in and connect</button></form>'
    )


def invalid_link() -> HTMLResponse:
    return page("Invalid link", "<p>This connect link is not valid or has expired.</p>", 404)


def live_flow(config: Config, store: Store, flow_id: str) -> Flow | None:
    if not flow_id_is_genuine(config.key, flow_id):
        return None
    flow = store.flows.get(flow_id)
    if flow is None or time.time() >= flow.exp:
        return None
    return flow


def web_routes(config: Config, store: Store) -> list[Route]:
    async def connect_form(request: Request) -> Response:
        flow_id = request.query_params.get("flow", "")
        if live_flow(config, store, flow_id) is None:
            return invalid_link()
        return page("Connect", sign_in_form(flow_id))

    async def connect_submit(request: Request) -> Response:
        form = await request.form()
        flow_id, name, password = (str(form.get(k, "")) for k in ("flow", "username", "password"))
        flow = live_flow(config, store, flow_id)
        if flow is None:
            return invalid_link()
        user = config.sign_in(name, password)
        if user is None:
            return page("Connect", sign_in_form(flow_id, "Wrong user name or password."), 401)
        # The same-user rule: only the MCP user whose call made this flow may complete it.
        if not hmac.compare_digest(user.name.encode(), flow.user.encode()):
            return page(
                "Wrong user",
                "<p>This connect link was made for another user.</p>"
                "<p>Nothing was connected. Ask the person whose agent made the request to open it.</p>",
                403,
            )
        store.connections.add(user.name)
        return page(
            "Connected",
            f"<p>Connected. You can go back to the console.</p><p>Signed in as {html.escape(user.name)}.</p>",
        )

    async def stats(request: Request) -> Response:
        return JSONResponse(
            {"connect_requests": store.connect_requests, "connections": sorted(store.connections)}
        )

    return [
        Route(CONNECT_PATH, connect_form, methods=["GET"]),
        Route(CONNECT_PATH, connect_submit, methods=["POST"]),
        Route("/stats", stats, methods=["GET"]),
    ]


class Gate:
    """Outermost ASGI layer: counts /connect requests and refuses MCP requests without a known token."""

    def __init__(self, app: ASGIApp, config: Config, store: Store) -> None:
        self.app = app
        self.config = config
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path == "/connect" or path.startswith("/connect/"):
                self.store.connect_requests += 1
            if path == MCP_PATH or path.startswith(MCP_PATH + "/"):
                token = bearer_token(Headers(scope=scope))
                if token is None or self.config.user_by_token(token) is None:
                    response = JSONResponse(
                        {"error": "invalid_token", "error_description": "a valid bearer token is required"},
                        status_code=401,
                        headers={"WWW-Authenticate": f'Bearer realm="{SERVER_NAME}"'},
                    )
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def transport_security(config: Config, host: str) -> TransportSecuritySettings:
    """DNS-rebinding check: loopback binds admit loopback hosts (and --public-url's) only."""
    if not _is_loopback(host):
        # Reachable from elsewhere under names we cannot know; the bearer token still guards /mcp.
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if config.public_url is not None:
        public = urlsplit(config.public_url)
        hosts.append(public.netloc)
        origins.append(f"{public.scheme}://{public.netloc}")
    return TransportSecuritySettings(allowed_hosts=hosts, allowed_origins=origins)


def build_app(config: Config, store: Store, host: str = "127.0.0.1") -> ASGIApp:
    server = build_server(config, store)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=transport_security(config, host),
        custom_starlette_routes=web_routes(config, store),
    )
    return Gate(app, config, store)


# --- serving ------------------------------------------------------------------------------


async def serve(config: Config, host: str, port: int) -> None:
    await serve_and_announce(build_app(config, Store(), host), host, port, MCP_PATH)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m console.demo.connect",
        description="Demo MCP server whose tool needs a third-party account linked through URL mode.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0 = any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="external base URL for connect links (default: the host the MCP client used)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_config(os.environ, args.public_url)
    except ConfigError as exc:
        sys.stderr.write(f"connect: refusing to start: {exc}\n")
        return 2
    try:
        anyio.run(serve, config, args.host, args.port)
    except KeyboardInterrupt:  # Ctrl+C at the terminal reaches `console demo` and this child alike
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
