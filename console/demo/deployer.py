"""Demo MCP server "deployer": one `deploy` tool that asks the user where to deploy, unless the call says.

A port of the Go `deploy` example from the elicitation book chapter to the low-level
`mcp.server.Server` (protocol 2026-07-28, Multi Round-Trip Requests):

* Round 1 (no requestState): answers `input_required` with a form elicitation under the
  key "target" (environment staging/production + a confirm checkbox) and a signed
  requestState that pins the service and the version the user is asked to confirm.
* Round 2 (the client retries with inputResponses + requestState): verifies the state
  first, then acts on the answer.
* A call that names its `environment` is not asked where: it deploys there at once.

With DEPLOY_REQUIRE_APPROVAL_JWKS, a deploy to production happens only when the request carries the
console's approval attestation for exactly this call, issued for this server, by two people other than
the requester (console/demo/approvals.py): a call that names production needs its approval at the
console's gate, and an answer of production to this server's question needs that answer.

The requestState is our own token, base64url(JSON {"service", "version", "exp"}) + "." +
base64url(HMAC-SHA256(key, JSON)) (made and checked by `console.demo.signing`, MACing the JSON
alone), so a retry still works after a server restart or on another instance that has the same key.

Run:
    DEPLOY_STATE_KEY=<32+ characters> python -m console.demo.deployer              # stdio
    DEPLOY_STATE_KEY=<32+ characters> python -m console.demo.deployer --http 8765  # Streamable HTTP

With `--http PORT` the server binds 127.0.0.1 (PORT 0 picks a free port) and, once it accepts
connections, prints exactly one line to stdout: `listening on http://127.0.0.1:<port>/mcp`.

Environment:
    DEPLOY_STATE_KEY        HMAC key, at least 32 characters; without it the server refuses to
                            start (exit status 2).
    DEPLOY_STATE_TTL        seconds an issued requestState stays valid (default 600).
    DEPLOY_REQUIRE_APPROVAL_JWKS
                            the URL of a console's keys (<console>/.well-known/jwks.json): production
                            deploys then need its signed approval in the request's _meta.
    DEPLOY_APPROVAL_ISSUER  the console's base URL (CONSOLE_BASE_URL) its attestations name; default:
                            DEPLOY_REQUIRE_APPROVAL_JWKS without /.well-known/jwks.json.
    DEPLOY_APPROVAL_AUDIENCE
                            the audience the console attests for this server; default: what the console
                            gives a stdio server in APPROVAL_CONSOLE_AUDIENCE, or over HTTP this
                            server's own URL (http://127.0.0.1:<port>/mcp), as registered in the console.
    DEPLOY_TEST_CLOCK_FILE  TEST-ONLY hook. When set, the number of seconds written in that file
                            (a float; a missing or empty file counts as 0) is added to the server's
                            clock on every check and every state it issues, so a test can write
                            "700" into it to make an already issued state (or attestation) expire
                            without sleeping.
                            Never set it in production.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from console.attestation import ANSWER, AUDIENCE_VARIABLE, GATE
from console.demo.approvals import ApprovalCheck
from console.demo.signing import invalid_state, seal, unseal
from console.listening import listening_socket, mcp_port, serve_mcp

SERVER_NAME = "deployer"
SERVER_VERSION = "1.0.0"
MIN_KEY_LENGTH = 32
DEFAULT_TTL_SECONDS = 600.0
QUESTION_KEY = "target"
JWKS_PATH = "/.well-known/jwks.json"
ENVIRONMENTS = ("staging", "production")

DEPLOY_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "description": "Name of the service"},
        "environment": {
            "type": "string",
            "enum": list(ENVIRONMENTS),
            "description": "Where to deploy; when left out, the user is asked",
        },
    },
    "required": ["service"],
}

TARGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "environment": {
            "type": "string",
            "title": "Target environment",
            "oneOf": [
                {"const": "staging", "title": "Staging"},
                {"const": "production", "title": "Production"},
            ],
            "default": "staging",
        },
        "confirm": {"type": "boolean", "title": "I have reviewed the changes"},
    },
    "required": ["environment", "confirm"],
}


class ConfigError(Exception):
    """The environment does not allow the server to start."""


@dataclass(frozen=True)
class Config:
    key: bytes
    ttl_seconds: float
    clock_file: Path | None
    approvals: ApprovalCheck | None = None  # production deploys need the console's signed approval


@dataclass(frozen=True)
class DeployState:
    service: str
    version: str
    exp: float


def load_config(env: Mapping[str, str], own_url: str | None = None) -> Config:
    """The configuration `env` gives; `own_url` is where this server listens when it serves HTTP."""
    key = env.get("DEPLOY_STATE_KEY", "")
    if len(key) < MIN_KEY_LENGTH:
        raise ConfigError(f"DEPLOY_STATE_KEY must be set and at least {MIN_KEY_LENGTH} characters long")
    raw_ttl = env.get("DEPLOY_STATE_TTL", "").strip()
    try:
        ttl = float(raw_ttl) if raw_ttl else DEFAULT_TTL_SECONDS
    except ValueError:
        raise ConfigError(f"DEPLOY_STATE_TTL must be a number of seconds, got {raw_ttl!r}") from None
    if not math.isfinite(ttl) or ttl <= 0:
        raise ConfigError("DEPLOY_STATE_TTL must be a positive, finite number of seconds")
    clock_file = env.get("DEPLOY_TEST_CLOCK_FILE")
    jwks_url = env.get("DEPLOY_REQUIRE_APPROVAL_JWKS", "").strip()
    if jwks_url and not jwks_url.startswith(("https://", "http://")):
        raise ConfigError(f"DEPLOY_REQUIRE_APPROVAL_JWKS must be an http(s) URL, got {jwks_url!r}")
    return Config(
        key=key.encode(),
        ttl_seconds=ttl,
        clock_file=Path(clock_file) if clock_file else None,
        approvals=_approval_check(env, jwks_url, own_url) if jwks_url else None,
    )


def _approval_check(env: Mapping[str, str], jwks_url: str, own_url: str | None) -> ApprovalCheck:
    issuer = env.get("DEPLOY_APPROVAL_ISSUER", "").strip() or (
        jwks_url.removesuffix(JWKS_PATH) if jwks_url.endswith(JWKS_PATH) else ""
    )
    if not issuer:
        raise ConfigError(
            f"set DEPLOY_APPROVAL_ISSUER: DEPLOY_REQUIRE_APPROVAL_JWKS does not end with {JWKS_PATH}"
        )
    audience = (
        env.get("DEPLOY_APPROVAL_AUDIENCE", "").strip() or env.get(AUDIENCE_VARIABLE, "").strip() or own_url
    )
    if not audience:
        raise ConfigError(
            f"set DEPLOY_APPROVAL_AUDIENCE: the console gave no {AUDIENCE_VARIABLE} (it gives it to "
            "the stdio servers it starts)"
        )
    return ApprovalCheck(jwks_url, issuer=issuer, audience=audience)


def latest_version(service: str) -> str:
    """Placeholder: a real deployer would ask the build system."""
    return "2.4.1"


def now(config: Config) -> float:
    return time.time() + _test_clock_offset(config.clock_file)


def moment(config: Config) -> datetime:
    return datetime.fromtimestamp(now(config), UTC)


def _test_clock_offset(clock_file: Path | None) -> float:
    if clock_file is None:
        return 0.0
    try:
        text = clock_file.read_text().strip()
    except FileNotFoundError:
        return 0.0
    return float(text) if text else 0.0


# --- requestState token -------------------------------------------------------------------


def sign_state(key: bytes, state: DeployState) -> str:
    # purpose=b"": this server has always MACed the JSON alone; keep its tokens as they are.
    return seal(key, {"service": state.service, "version": state.version, "exp": state.exp}, purpose=b"")


def _open_state(key: bytes, token: str) -> DeployState:
    """Return the signed state, or raise ValueError if the token was not made with `key`."""
    data = unseal(key, token, purpose=b"")
    service, version, exp = data.get("service"), data.get("version"), data.get("exp")
    if not (isinstance(service, str) and isinstance(version, str) and isinstance(exp, int | float)):
        raise ValueError("unexpected payload")
    return DeployState(service=service, version=version, exp=float(exp))


def verify_state(config: Config, token: str, service: str) -> DeployState:
    try:
        state = _open_state(config.key, token)
    except ValueError:
        raise invalid_state("tampered") from None
    if state.service != service:
        raise invalid_state("foreign")
    if now(config) >= state.exp:
        raise invalid_state("expired")
    return state


# --- the deploy tool ----------------------------------------------------------------------


def text_result(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def ask_target(config: Config, service: str, version: str) -> types.InputRequiredResult:
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=f"{service} in version {version} — deploy where?",
            requested_schema=TARGET_SCHEMA,
        )
    )
    state = DeployState(service=service, version=version, exp=now(config) + config.ttl_seconds)
    return types.InputRequiredResult(
        input_requests={QUESTION_KEY: question},
        request_state=sign_state(config.key, state),
    )


async def decide(
    config: Config,
    service: str,
    state: DeployState,
    answer: types.ElicitResult | None,
    params: types.CallToolRequestParams,
    meta: Mapping[str, Any] | None,
) -> types.CallToolResult | types.InputRequiredResult:
    if answer is None:
        return ask_target(config, service, state.version)
    if answer.action != "accept":
        return text_result(f"Deployment not started ({answer.action}).")
    content = answer.content or {}
    if content.get("confirm") is not True:
        return text_result("No deployment without confirmation.")
    environment = content.get("environment")
    if environment not in ENVIRONMENTS:
        # Required information is missing or unusable: ask again rather than fail (spec MRTR rules).
        return ask_target(config, service, state.version)
    return await deploy_to(config, service, state.version, str(environment), params, meta, ANSWER)


async def deploy_to(
    config: Config,
    service: str,
    version: str,
    environment: str,
    params: types.CallToolRequestParams,
    meta: Mapping[str, Any] | None,
    kind: str,
) -> types.CallToolResult:
    """Deploy; to production, with the console's approval of `kind`: at its gate for a call that names
    the environment, or the people's answer to this server's question."""
    if environment == "production" and config.approvals is not None:
        arguments = params.arguments or {}
        refusal = await config.approvals.refusal(meta, params.name, arguments, kind=kind, now=moment(config))
        if refusal is not None:
            return text_result(
                f"Not deployed: production needs the console's approval ({refusal}).", is_error=True
            )
    return text_result(f"{service} {version} is being deployed to {environment}.")


def service_argument(arguments: Mapping[str, Any] | None) -> str:
    service = (arguments or {}).get("service")
    if not isinstance(service, str) or not service:
        raise MCPError(code=types.INVALID_PARAMS, message="argument 'service' must be a non-empty string")
    return service


def target_answer(params: types.CallToolRequestParams) -> types.ElicitResult | None:
    answer = (params.input_responses or {}).get(QUESTION_KEY)
    return answer if isinstance(answer, types.ElicitResult) else None


def environment_argument(arguments: Mapping[str, Any] | None) -> str | None:
    environment = (arguments or {}).get("environment")
    if environment is not None and environment not in ENVIRONMENTS:
        message = f"argument 'environment' must be one of {', '.join(ENVIRONMENTS)}"
        raise MCPError(code=types.INVALID_PARAMS, message=message)
    return environment


async def deploy(
    config: Config,
    protocol_version: str,
    params: types.CallToolRequestParams,
    meta: Mapping[str, Any] | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    service = service_argument(params.arguments)
    environment = environment_argument(params.arguments)
    if protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return text_result(
            "deploy needs a client that speaks MCP 2026-07-28 (multi round-trip requests).", is_error=True
        )
    if environment is not None:
        return await deploy_to(config, service, latest_version(service), environment, params, meta, GATE)
    if params.request_state is None:
        return ask_target(config, service, latest_version(service))
    # The state is checked before any answer is looked at: a forged state is always rejected.
    state = verify_state(config, params.request_state, service)
    return await decide(config, service, state, target_answer(params), params, meta)


def build_server(config: Config) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(
            name="deploy",
            description=(
                "Deploy the latest version of a service. Asks the user for the target environment "
                "and a confirmation before anything happens, unless the call names the environment."
            ),
            input_schema=DEPLOY_INPUT_SCHEMA,
            title="Deploy a service",
            annotations=types.ToolAnnotations(
                read_only_hint=False,
                destructive_hint=True,
                idempotent_hint=False,  # a second deploy is a second rollout
                open_world_hint=True,  # it changes what the service's users reach
            ),
        )
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name != "deploy":
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return await deploy(config, ctx.protocol_version, params, ctx.meta)

    return Server(
        SERVER_NAME,
        version=SERVER_VERSION,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# --- transports ---------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="Demo MCP deploy server.", prog="python -m console.demo.deployer")
    # Over HTTP its own URL is the default audience of its approvals, so the port is bound first.
    sock: socket.socket | None = None if port is None else listening_socket("127.0.0.1", port)
    own_url = None if sock is None else f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    try:
        config = load_config(os.environ, own_url)
    except ConfigError as exc:
        if sock is not None:
            sock.close()
        sys.stderr.write(f"deployer: refusing to start: {exc}\n")
        return 2
    server = build_server(config)
    try:
        serve_mcp(server, sock)
    except KeyboardInterrupt:  # Ctrl+C at the terminal reaches the console and its servers alike
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
