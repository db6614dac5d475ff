"""Registered MCP servers."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, Session, mapped_column

from console.audit.chain import EventContext, finds_context
from console.db import Base, UtcDateTime, new_id, utcnow


class McpServer(Base):
    __tablename__ = "mcp_server"
    __table_args__ = (UniqueConstraint("team_id", "name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    transport: Mapped[str] = mapped_column(String(10))  # "stdio" | "http"
    command_json: Mapped[str | None] = mapped_column(Text, default=None)  # JSON list: program + args
    # {name: {"sealed": ...}}: values sealed under the console secret (console/mcp/secrets.py).
    env_json: Mapped[str] = mapped_column(Text, default="{}")
    url: Mapped[str | None] = mapped_column(Text, default=None)
    headers_json: Mapped[str] = mapped_column(Text, default="{}")
    # Set only by a site admin or the operator: the server may be on a loopback or private address.
    internal: Mapped[bool] = mapped_column(Boolean, default=False)
    # "shared": every call uses the headers/env above; "per_user": each call also carries its owner's own
    # credential, sent as the header (HTTP) or environment variable (stdio) named by `credential_name`;
    # "oauth": each call carries its owner's own OAuth access token (MCP authorization, console/oauth);
    # "oauth_team": every call carries the one token of a team account (client credentials).
    credential_mode: Mapped[str] = mapped_column(String(10), default="shared")
    credential_name: Mapped[str | None] = mapped_column(String(100), default=None)
    # The OAuth client an admin registered for it by hand: {"client_id": ..., "client_secret": {"sealed":
    # ...} or null}; None: the console uses its metadata document or registers itself.
    oauth_client_json: Mapped[str | None] = mapped_column(Text, default=None)
    # A team account's ("oauth_team") current token, sealed: {"sealed": ...} (console/oauth/team.py).
    team_grant: Mapped[str | None] = mapped_column(Text, default=None)
    # Whether OAuth requests carry `resource` (RFC 8707): "send", "omit" (Microsoft Entra ID refuses it),
    # None: the console's rule (console/oauth/resource_indicator.py); and the Application ID URI that
    # qualifies the scopes asked for when it is omitted (None: asked as the server names them).
    oauth_resource_indicator: Mapped[str | None] = mapped_column(String(10), default=None)
    oauth_scope_prefix: Mapped[str | None] = mapped_column(String(500), default=None)
    trusted: Mapped[bool] = mapped_column(Boolean, default=False)
    idempotent: Mapped[bool] = mapped_column(Boolean, default=False)
    # How long the server waits for the answer to a question it pushes (an older server, MCP 2025-11-25),
    # when an admin knows it: a held question expires before the server gives up. None: not known.
    push_hold_seconds: Mapped[int | None] = mapped_column(Integer, default=None)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    # What the server spoke when the console last connected (e.g. "2026-07-28"); None before that.
    protocol_version: Mapped[str | None] = mapped_column(String(20), default=None)
    # The one MCP version the console offers it (an admin's pin, e.g. "2025-11-25" for a server that
    # pushes questions only on the older protocol); None: the newest both speak.
    pinned_protocol: Mapped[str | None] = mapped_column(String(20), default=None)
    # Its own roots (a JSON list of {uri, name?}, console/mcp/roots.py); None: the team's default.
    roots_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


@finds_context("server")
def _server_context(session: Session, server_id: str) -> EventContext | None:
    server = session.get(McpServer, server_id)
    return None if server is None else EventContext(team_id=server.team_id, server=server.name)


class AgentRoots(Base):
    """The roots an agent's client listed on one 2025-11-25 gateway session (console/mcp/agent_roots.py),
    kept for whichever console process sends that session's calls."""

    __tablename__ = "mcp_agent_roots"

    session_id: Mapped[str] = mapped_column(String(100), primary_key=True)  # the gateway's MCP session id
    user_id: Mapped[str] = mapped_column(String(32))  # whose agent: only their calls read them
    roots_json: Mapped[str] = mapped_column(Text)  # a JSON list of {uri, name?}, as console/mcp/roots.py
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
