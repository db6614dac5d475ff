"""Approval policy rules: a team's default, its stricter default for destructive tools, overrides."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from console.db import Base, UtcDateTime, new_id, utcnow

SCOPES = ("team", "destructive", "server", "tool")


class PolicyRule(Base):
    """One layer of a team's policy; a field left empty inherits from the layer below.

    `scope_key` makes each layer unique per team ("team", "destructive", "server:<id>",
    "tool:<server id or *>:<pattern>", each followed by ":when:<digest of the condition>" for a rule
    that applies only to calls whose arguments meet `condition`); a unique constraint over nullable
    columns would not.
    """

    __tablename__ = "policy_rule"
    __table_args__ = (UniqueConstraint("team_id", "scope_key"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("identity_team.id"))
    scope: Mapped[str] = mapped_column(String(12))
    server_id: Mapped[str | None] = mapped_column(ForeignKey("mcp_server.id"), default=None)
    tool_pattern: Mapped[str | None] = mapped_column(String(200), default=None)
    scope_key: Mapped[str] = mapped_column(String(300))
    answerers: Mapped[str | None] = mapped_column(String(20), default=None)
    no_self_approval: Mapped[bool | None] = mapped_column(Boolean, default=None)
    required_approvals: Mapped[int | None] = mapped_column(Integer, default=None)
    expiry_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    expiry_action: Mapped[str | None] = mapped_column(String(10), default=None)
    step_up_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    gate: Mapped[bool | None] = mapped_column(Boolean, default=None)
    allow_edit: Mapped[bool | None] = mapped_column(Boolean, default=None)
    sampling: Mapped[bool | None] = mapped_column(Boolean, default=None)
    escalate_after_minutes: Mapped[int | None] = mapped_column(Integer, default=None)
    escalate_to: Mapped[str | None] = mapped_column(String(300), default=None)  # rules.ESCALATION_GROUPS
    condition: Mapped[str | None] = mapped_column(Text, default=None)  # console/policies/conditions.py
    updated_by: Mapped[str | None] = mapped_column(ForeignKey("identity_user.id"), default=None)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)

    def values(self) -> dict[str, Any]:
        """The settings this layer sets (None inherits)."""
        return {
            "answerers": self.answerers,
            "no_self_approval": self.no_self_approval,
            "required_approvals": self.required_approvals,
            "expiry_minutes": self.expiry_minutes,
            "expiry_action": self.expiry_action,
            "step_up_minutes": self.step_up_minutes,
            "gate": self.gate,
            "allow_edit": self.allow_edit,
            "sampling": self.sampling,
            "escalate_after_minutes": self.escalate_after_minutes,
            "escalate_to": self.escalate_to,
        }
