"""The console as a client under the official MCP conformance suite.

The suite starts `python -m console.conformance <server-url>` with MCP_CONFORMANCE_SCENARIO (and for
some scenarios MCP_CONFORMANCE_CONTEXT) set. This drives the console's own client path against that
server (console/scripted.py: a throwaway SQLite database, the server registered over HTTP, calls
started with the same service functions the API uses, the dispatcher sending them over the connection
pool), with every question answered by a scripted person (accept, a form filled with the schema's
defaults).
Exit status 0 once every call the scenario needs completed, 1 with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2

from console.calls.connects.deciding import kept_challenge
from console.calls.states import CallStatus, QuestionMode
from console.errors import ConsoleError
from console.files import write_private
from console.mcp.admin import ServerSettings
from console.mcp.challenge import AuthorizationRequired
from console.oauth.flow import Returned
from console.scripted import Answer, Outcome, Round, ScriptedConsole, scripted_console

TEAM = "conformance"
SERVER = "scenario"
CALL_TIMEOUT_SECONDS = 20.0
# The MRTR scenario grades four tools, called one after another (the unrelated one between two flows).
MRTR_TOOLS = ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type")
SCHEMA_ECHO = ("json_schema_echo", "json_schema_2020_12_tool")
# Where the console says it is served. Nothing listens there: the suite's authorization server redirects
# the browser to the callback at once, and the scripted browser reads the redirect instead of following it.
CONSOLE_URL = "https://console.conformance.invalid"
# The client ID the suite expects of a client that has a metadata document (it never fetches it).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
# Sign-ins for listing the tools: the first, then step-ups while the server keeps asking for more scopes.
MAX_AUTHORIZATIONS = 3
BROWSER_TIMEOUT_SECONDS = 10.0
# The platform hands the console its workload identity token; here the scenario does, as `valid_jwt`.
WORKLOAD_SCENARIOS = ("auth/wif-jwt-bearer",)
# The member signed in through the scenario's identity provider; the console kept the ID token it gives.
ENTERPRISE_SCENARIOS = ("auth/enterprise-managed-authorization",)
ID_TOKEN_HOURS = 1  # how long the scenario's ID token is valid
Result = TypeVar("Result")


class ScenarioFailed(Exception):
    """The scenario's calls could not be completed; the message says why."""


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


def form_defaults(schema: dict[str, Any]) -> dict[str, Any]:
    """An accepting answer: each property's default, and a plain value for required ones without one."""
    content: dict[str, Any] = {}
    required = set(schema.get("required") or ())
    for name, prop in (schema.get("properties") or {}).items():
        if "default" in prop:
            content[name] = prop["default"]
        elif name in required:
            content[name] = _plain_value(prop)
    return content


def _plain_value(prop: dict[str, Any]) -> Any:
    if prop.get("enum"):
        return prop["enum"][0]
    if prop.get("oneOf"):
        return prop["oneOf"][0].get("const")
    kind = prop.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return prop.get("minimum", 0)
    if kind == "array":
        items = prop.get("items") or {}
        options = items.get("enum") or [o.get("const") for o in items.get("anyOf") or []]
        return options[: max(1, prop.get("minItems", 1))]
    return "x" * max(1, prop.get("minLength", 1))


def sample_arguments(tool: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a listed tool: a plain value for each required property."""
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or ())
    return {
        name: _plain_value(prop)
        for name, prop in (schema.get("properties") or {}).items()
        if name in required and isinstance(prop, dict)
    }


def plan(scenario: str, context: dict[str, Any], tools: list[dict[str, Any]]) -> list[ToolCall]:
    """Which tools/call requests the scenario expects, given the tools the server listed."""
    listed = {tool["name"]: tool for tool in tools}
    if scenario == "sep-2322-client-request-state":
        return [ToolCall(name, {}) for name in MRTR_TOOLS]
    if "toolCalls" in context:
        return [ToolCall(c["name"], dict(c.get("arguments") or {})) for c in context["toolCalls"]]
    if scenario == "tools_call":
        return [ToolCall("add_numbers", {"a": 2, "b": 3})]
    echo, focal = SCHEMA_ECHO
    if echo in listed and focal in listed:
        return [ToolCall(echo, {"schema": listed[focal]["inputSchema"]})]
    if scenario == "json-schema-ref-no-deref":
        return []  # listing the tools is the whole scenario; the pool has done it
    return [ToolCall(name, sample_arguments(tool)) for name, tool in listed.items()]


async def accept_with_defaults(waiting: Round) -> dict[str, Answer]:
    """The scripted person: accepts every question, a form with its defaults."""
    return {
        q.id: Answer(
            "accept",
            form_defaults(json.loads(q.schema_json or "{}")) if q.mode == QuestionMode.FORM else None,
        )
        for q in waiting.questions
    }


async def click_through(url: str) -> Returned:
    """The person's browser at the suite's authorization server, which approves at once and redirects to
    the console's callback: the redirect's query is what the callback would be sent."""
    async with httpx2.AsyncClient(timeout=BROWSER_TIMEOUT_SECONDS, follow_redirects=False) as http:
        response = await http.get(url)
    location = response.headers.get("location")
    if not response.is_redirect or not location:
        raise ScenarioFailed(f"the authorization page answered HTTP {response.status_code}, not a redirect")
    query = parse_qs(urlsplit(location).query)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    return Returned(state=one("state"), code=one("code"), iss=one("iss"), error=one("error"))


def server_settings(
    url: str, scenario: str, context: dict[str, Any], workload_token_file: str = ""
) -> ServerSettings:
    """The scenario's server (internal: the suite runs it on this machine); behind OAuth for `auth/*`, with
    the client the scenario says was registered by hand, if any; a team account for client credentials
    and for workload identity federation (the workload's token in `workload_token_file`)."""
    secured = scenario.startswith("auth/")
    return ServerSettings(
        transport="http",
        url=url,
        internal=True,
        oauth=secured,
        oauth_team=scenario.startswith("auth/client-credentials-") or scenario in WORKLOAD_SCENARIOS,
        oauth_client_id=str(context.get("client_id") or "") if secured else "",
        oauth_client_secret=context.get("client_secret") if secured else None,
        oauth_client_key=context.get("private_key_pem") if secured else None,
        oauth_workload_token_file=workload_token_file,
        oauth_enterprise=scenario in ENTERPRISE_SCENARIOS,
    )


def single_sign_on(scenario: str, context: dict[str, Any]) -> dict[str, str]:
    """The console's single sign-on settings: the scenario's identity provider, if it has one."""
    if scenario not in ENTERPRISE_SCENARIOS:
        return {}
    return {"oidc_issuer": str(context["idp_issuer"]), "oidc_client_id": str(context["idp_client_id"])}


def workload_token_file(folder: Path, scenario: str, context: dict[str, Any]) -> str:
    """Where the platform would keep the console's workload identity token: a private file in `folder`
    holding the scenario's valid token ("" when the scenario has none)."""
    token = context.get("valid_jwt")
    if scenario not in WORKLOAD_SCENARIOS or not isinstance(token, str):
        return ""
    path = folder / "workload-token"
    write_private(path, token)
    return str(path)


async def run_scenario(url: str, scenario: str, context: dict[str, Any]) -> list[str]:
    """Run the scenario's calls through the console; the text of each result, in order."""
    texts: list[str] = []
    with tempfile.TemporaryDirectory(prefix="console-conformance-") as folder:
        token_file = workload_token_file(Path(folder), scenario, context)
        async with scripted_console(
            secret_key=secrets.token_urlsafe(32),
            base_url=CONSOLE_URL,
            oauth_client_metadata_url=CLIENT_METADATA_URL,
            **single_sign_on(scenario, context),
        ) as console:
            await console.seed(SERVER, server_settings(url, scenario, context, token_file))
            if scenario in ENTERPRISE_SCENARIOS:
                expires = datetime.now(UTC) + timedelta(hours=ID_TOKEN_HOURS)
                await console.signed_in_through_sso(str(context["idp_id_token"]), expires)
            tools = await _signed_in(console, console.listed_tools)
            for tool in plan(scenario, context, tools):
                listed = any(t["name"] == tool.name for t in tools)
                outcome = await _call(console, tool, listed)
                if outcome.status != CallStatus.COMPLETED:
                    raise ScenarioFailed(f"call ended {outcome.status}: {json.dumps(outcome.error)}")
                texts.append(_text(outcome.result or {}))
    return texts


async def _signed_in(console: ScriptedConsole, attempt: Callable[[], Awaitable[Result]]) -> Result:
    """`attempt`, after connecting the member's account each time the server asks for authorization."""
    for _ in range(MAX_AUTHORIZATIONS):
        try:
            return await attempt()
        except AuthorizationRequired as refusal:
            await console.connect(refusal.challenge, click_through)
    return await attempt()


async def _call(console: ScriptedConsole, tool: ToolCall, listed: bool) -> Outcome:
    """The call's outcome; a question to connect the member's account is answered by connecting, as the
    member would from the question's page."""

    async def answer_round(waiting: Round) -> dict[str, Answer]:
        connect = next((q for q in waiting.questions if q.mode == QuestionMode.CONNECT), None)
        if connect is None:
            return await accept_with_defaults(waiting)
        asked = waiting.input_requests.get(connect.key, {}).get("params", {})
        await console.connect(kept_challenge(asked), click_through)  # accepts the question
        return {}

    with anyio.fail_after(CALL_TIMEOUT_SECONDS):
        return await console.call(tool.name, tool.arguments, answer_round, check_listed=listed)


def _text(result: dict[str, Any]) -> str:
    parts = result.get("content") or []
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)) or json.dumps(result)


def _reasons(exc: BaseException) -> list[str]:
    """The leaf errors, one line each; a group of anything else is re-raised (a bug, not a failed call)."""
    if isinstance(exc, BaseExceptionGroup):
        failures, rest = exc.split((ScenarioFailed, ConsoleError, TimeoutError))
        if rest is not None or failures is None:
            raise exc
        return [reason for leaf in failures.exceptions for reason in _reasons(leaf)]
    return [str(exc) or type(exc).__name__]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m console.conformance <server-url>", file=sys.stderr)  # noqa: T201  # CLI output
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        texts = anyio.run(run_scenario, args[0], scenario, context)
    except (ScenarioFailed, ConsoleError, TimeoutError, BaseExceptionGroup) as exc:
        for reason in _reasons(exc):
            print(f"conformance client: {scenario}: {reason}", file=sys.stderr)  # noqa: T201  # CLI output
        return 1
    for text in texts:
        print(text)  # noqa: T201  # CLI output
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
