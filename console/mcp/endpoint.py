"""Where an MCP server lives and what one request to it looks like."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from console.mcp.roots import Root

# The protocol's log levels, least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
ELICITATION = "elicitation/create"
SAMPLING = "sampling/createMessage"
ROOTS = "roots/list"


# The MCP versions a server's settings may pin, oldest first.
PROTOCOL_PINS = ("2025-11-25", "2026-07-28")


@dataclass(frozen=True)
class AgentSession:
    """An agent's 2025-11-25 gateway session whose calls go on connections of its own, told the agent's
    roots (console/mcp/agent_roots.py): no other agent's call is ever sent on them."""

    agent: str  # the user whose agent it is: how many such connections one agent holds is bounded
    id: str  # the gateway's MCP session id


@dataclass(frozen=True)
class Endpoint:
    """How to reach one server with one credential: the key of one warm connection."""

    transport: Literal["stdio", "http"]
    command: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    public_only: bool = False  # connect only to public addresses (console/mcp/addresses.py)
    # What the connection tells the server it may work in; with none, roots are not offered at all.
    roots: tuple[Root, ...] = ()
    # The private key (JWK) a DPoP-bound token is proven with on every request (console/mcp/dpop.py).
    dpop_key: str = field(default="", repr=False)
    # The one MCP version offered (a server's pin); None: the newest both sides speak.
    protocol: str | None = None
    # The agent's session whose connection this is (its `roots` are then the agent's); None: shared.
    session: AgentSession | None = None

    @classmethod
    def stdio(
        cls, command: list[str], env: dict[str, str] | None = None, *, roots: tuple[Root, ...] = ()
    ) -> Endpoint:
        return cls("stdio", command=tuple(command), env=tuple(sorted((env or {}).items())), roots=roots)

    @classmethod
    def http(
        cls,
        url: str,
        headers: dict[str, str] | None = None,
        *,
        public_only: bool = False,
        roots: tuple[Root, ...] = (),
        dpop_key: str = "",
    ) -> Endpoint:
        pairs = tuple(sorted((headers or {}).items()))
        return cls("http", url=url, headers=pairs, public_only=public_only, roots=roots, dpop_key=dpop_key)

    def describe(self) -> str:
        """Where the server runs, for people and the audit log: never header values, URL user info or
        query (they may be credentials)."""
        if self.transport != "http":
            return shlex.join(self.command)
        parts = urlsplit(self.url)
        port = f":{parts.port}" if parts.port else ""
        host = parts.hostname or ""
        return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{port}{parts.path}"


class Progress(Protocol):
    """Where a request's progress notifications go."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class LogSink(Protocol):
    """Where a request's log notifications go (level, data, logger), as the server sent them."""

    async def __call__(self, level: str, data: Any, logger: str | None) -> None: ...


class PushedAsk(Protocol):
    """Answers what an older server (MCP 2025-11-25) pushes in the middle of a request."""

    async def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result to send back for the method and params the server sent (waiting for a person while
        the request is held open).

        Raises:
            PushedRefused: nobody will answer; the server is told so.
        """

    async def link_completed(self, elicitation_id: str) -> None:
        """The server says the out-of-band flow of a link it pushed is done."""


class PushedRefused(Exception):
    """A pushed request the console will not answer, with the reason the server is told."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class McpRequest:
    """One tools/call, prompts/get or resources/read, plus the answers of a resume; or a tasks/get,
    tasks/update or tasks/cancel about a task the server runs."""

    method: str
    params: dict[str, Any]
    input_responses: dict[str, dict[str, Any]] | None = None
    request_state: str | None = None
    # What the server is told the client answers besides elicitation ("sampling/createMessage",
    # "roots/list"): the agent behind the MCP gateway answers those itself, and people write sampling
    # replies when the team's policy says so (roots an admin set travel with the endpoint).
    relayed: frozenset[str] = frozenset()
    on_progress: Progress | None = field(default=None, compare=False)  # the server's, for this request
    # The least severe log level wanted for this request, and where its log notifications go.
    log_level: str | None = None
    on_log: LogSink | None = field(default=None, compare=False)
    # Someone follows these logs (an agent through the gateway): the request waits a moment for its turn
    # to hear them rather than going without (log notifications name no request; see Connection).
    wait_for_logs: bool = False
    # More of the request's `_meta` (the console's approval attestation, console/attestation.py).
    meta: dict[str, Any] | None = None
    # Where an older server's pushed questions go while the request is held open (None: refused).
    on_pushed: PushedAsk | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Complete:
    result: dict[str, Any]


@dataclass(frozen=True)
class InputRequired:
    input_requests: dict[str, dict[str, Any]] = field(default_factory=dict)
    request_state: str | None = None


@dataclass(frozen=True)
class Task:
    """A call the server runs as a task (the tasks extension): as created, or as `tasks/get` reports it."""

    task_id: str
    status: str  # working | input_required | completed | failed | cancelled
    message: str | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] | None = None  # while input_required
    result: dict[str, Any] | None = None  # once completed
    error: dict[str, Any] | None = None  # once failed


Reply = Complete | InputRequired | Task
