"""Runs, calls and their input_required rounds."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow

METHODS = ("tools/call", "prompts/get", "resources/read")
TERMINAL = ("completed", "failed", "interrupted", "abandoned")


class Run(Base):
    __tablename__ = "run"
    __table_args__ = (Index("ix_run_team_created", "team_id", "created_at"),)  # the runs list, newest first

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"), index=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("identity_user.id"), index=True)
    agent: Mapped[str] = mapped_column(String(200), default="")
    title: Mapped[str] = mapped_column(String(500))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Call(Base):
    """One MCP request being driven to its end; `params_json` is the agent's text, byte for byte."""

    __tablename__ = "call"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    run_id: Mapped[str] = mapped_column(ForeignKey("run.id"), index=True)
    server_id: Mapped[str] = mapped_column(ForeignKey("mcp_server.id"))
    method: Mapped[str] = mapped_column(String(30))
    params_json: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), index=True)
    round: Mapped[int] = mapped_column(Integer, default=0)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    result_json: Mapped[str | None] = mapped_column(Text, default=None)
    error_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The tool's annotations as the server listed them when the call started (policies read them).
    tool_annotations_json: Mapped[str | None] = mapped_column(Text, default=None)


class CallRound(Base):
    """One input_required answer from the server, kept as received.

    `request_state_json` is the requestState as a JSON string literal (ASCII escapes), so every
    string a server can send, NUL and lone surrogates included, survives any database unchanged.
    """

    __tablename__ = "call_round"
    __table_args__ = (UniqueConstraint("call_id", "n"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    call_id: Mapped[str] = mapped_column(ForeignKey("call.id"), index=True)
    n: Mapped[int] = mapped_column(Integer)
    input_requests_json: Mapped[str] = mapped_column(Text)
    request_state_json: Mapped[str | None] = mapped_column(Text, default=None)
    status: Mapped[str] = mapped_column(String(20))  # open -> ready -> sent -> answered | superseded
    error_json: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
