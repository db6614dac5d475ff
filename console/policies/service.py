"""Reading and changing a team's policy rules, and resolving the policy of one call's questions."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.db import utcnow
from console.errors import InvalidInput, NotFound
from console.identity.models import Membership, User
from console.mcp.models import McpServer
from console.policies.conditions import ConditionError, parse
from console.policies.models import SCOPES, PolicyRule
from console.policies.rules import (
    POLICY_FIELDS,
    Escalation,
    Policy,
    check_values,
    combine,
    condition_text,
    describe_rule,
    layers_for,
    treated_as_destructive,
)

MAX_PATTERN = 200


@dataclass(frozen=True)
class Resolved:
    policy: Policy
    applied: list[dict[str, Any]]
    destructive: bool


@dataclass(frozen=True)
class RuleView:
    rule: PolicyRule
    server_name: str | None

    @property
    def label(self) -> str:
        scope = self.rule.scope
        if scope == "team":
            return "Team default"
        if scope == "destructive":
            return "Destructive tools (stricter default)"
        if scope == "server":
            return f"Server {self.server_name}"
        where = f" on {self.server_name}" if self.server_name else " on any server"
        return f"Tool {self.rule.tool_pattern}{where}"

    @property
    def when(self) -> str | None:
        """The condition on the arguments, as people read it (None: every call of its scope)."""
        return condition_text(self.rule.condition) if self.rule.condition is not None else None

    @property
    def sentences(self) -> list[str]:
        """What this rule sets, in the words the question page uses."""
        return describe_rule(self.rule.values())


async def resolve_for_request(
    *,
    session: AsyncSession,
    team_id: str,
    server_id: str,
    method: str,
    tool: str | None,
    annotations: dict[str, Any] | None,
    arguments: Mapping[str, Any] | None = None,
) -> Resolved:
    """The policy the questions of a request are asked under, with which rules set what.

    `tool` is the tool's name for a `tools/call` and `annotations` its annotations as the server listed
    them, if any; `arguments` are the call's, which rules with a condition look at.
    """
    server = await session.get(McpServer, server_id)
    if server is None:
        raise NotFound(f"no server {server_id!r}")
    rules = (await session.execute(_RULES_OF_TEAM, {"team_id": team_id})).scalars().all()
    destructive = treated_as_destructive(method, annotations, server.trusted)
    layers = layers_for(
        rules,
        server_id=server.id,
        server_name=server.name,
        tool=tool,
        destructive=destructive,
        arguments=arguments,
    )
    policy, applied = combine(layers)
    return Resolved(policy, applied, destructive)


# Built once: it runs for every call and every round that asks people.
_RULES_OF_TEAM = select(PolicyRule).where(PolicyRule.team_id == bindparam("team_id"))


async def list_rules(*, session: AsyncSession, team_id: str) -> list[RuleView]:
    """Every rule of the team, in the order they layer."""
    rows = (
        await session.execute(
            select(PolicyRule, McpServer.name)
            .outerjoin(McpServer, McpServer.id == PolicyRule.server_id)
            .where(PolicyRule.team_id == team_id)
        )
    ).all()
    order = {scope: n for n, scope in enumerate(SCOPES)}
    views = [RuleView(rule, name) for rule, name in rows]
    return sorted(
        views,
        key=lambda v: (
            order[v.rule.scope],
            v.server_name or "",
            v.rule.tool_pattern or "",
            v.rule.condition is not None,
            v.rule.condition or "",
        ),
    )


async def save_rule(
    *,
    session: AsyncSession,
    actor: Actor,
    team_id: str,
    scope: str,
    server_id: str | None = None,
    tool_pattern: str | None = None,
    condition: str | None = None,
    values: Mapping[str, Any],
) -> PolicyRule:
    """Create or replace one layer of the team's policy (fields given as None inherit).

    With a `condition` (console/policies/conditions.py) the rule applies only to calls whose arguments
    meet it; it is a layer of its own beside the same scope's rule without one.

    Raises:
        InvalidInput: with field errors (`when` for a condition that does not parse, with its position).
    """
    tool_pattern = tool_pattern.strip() if tool_pattern is not None else None
    condition = condition.strip() if condition is not None and condition.strip() else None
    errors = check_values(values)
    unknown = set(values) - set(POLICY_FIELDS)
    if unknown:
        errors["policy"] = f"unknown settings: {', '.join(sorted(unknown))}"
    if condition is not None:
        try:
            parse(condition)
        except ConditionError as exc:
            errors["when"] = str(exc)
    if "escalate_to" not in errors:
        await _check_escalation_users(session, team_id, values.get("escalate_to"), errors)
    key = await _scope_key(session, team_id, scope, server_id, tool_pattern, errors)
    if condition is not None:
        key += ":when:" + hashlib.sha256(condition.encode()).hexdigest()[:32]
    if errors:
        raise InvalidInput("the policy is not valid", errors)
    existing = (
        await session.execute(
            select(PolicyRule).where(PolicyRule.team_id == team_id, PolicyRule.scope_key == key)
        )
    ).scalar_one_or_none()
    rule = existing or PolicyRule(
        team_id=team_id,
        scope=scope,
        server_id=server_id,
        tool_pattern=tool_pattern,
        condition=condition,
        scope_key=key,
    )
    before = rule.values() if existing else None
    for name in POLICY_FIELDS:
        setattr(rule, name, values.get(name))
    rule.updated_by = actor.id
    rule.updated_at = utcnow()
    session.add(rule)
    await session.flush()
    record_event(
        session=session,
        actor=actor,
        action="policy_changed",
        subject_type="team",
        subject_id=team_id,
        payload={"scope": key, "when": condition, "before": before, "after": rule.values()},
    )
    return rule


async def remove_rule(*, session: AsyncSession, actor: Actor, team_id: str, rule_id: str) -> None:
    """Delete one layer; its fields inherit again.

    Raises:
        NotFound: no such rule in the team.
    """
    rule = await session.get(PolicyRule, rule_id)
    if rule is None or rule.team_id != team_id:
        raise NotFound(f"no policy rule {rule_id!r}")
    record_event(
        session=session,
        actor=actor,
        action="policy_removed",
        subject_type="team",
        subject_id=team_id,
        payload={"scope": rule.scope_key, "when": rule.condition, "before": rule.values()},
    )
    await session.delete(rule)


async def _check_escalation_users(
    session: AsyncSession, team_id: str, group: Any, errors: dict[str, str]
) -> None:
    escalation = Escalation.parse(group, 1) if isinstance(group, str) else None
    if escalation is None or not escalation.users:
        return
    members = set(
        (
            await session.execute(
                select(User.name)
                .join(Membership, Membership.user_id == User.id)
                .where(Membership.team_id == team_id, User.name.in_(escalation.users))
            )
        )
        .scalars()
        .all()
    )
    strangers = [name for name in escalation.users if name not in members]
    if strangers:
        errors["escalate_to"] = f"not members of this team: {', '.join(strangers)}"


async def _scope_key(
    session: AsyncSession,
    team_id: str,
    scope: str,
    server_id: str | None,
    tool_pattern: str | None,
    errors: dict[str, str],
) -> str:
    if scope not in SCOPES:
        errors["scope"] = f"must be one of {', '.join(SCOPES)}"
        return ""
    if scope in ("team", "destructive"):
        if server_id is not None or tool_pattern is not None:
            errors["scope"] = f"a {scope} rule names no server or tool"
        return scope
    if server_id is not None:
        server = await session.get(McpServer, server_id)
        if server is None or server.team_id != team_id:
            errors["server"] = "no such server in this team"
    if scope == "server":
        if server_id is None:
            errors["server"] = "choose a server"
        return f"server:{server_id}"
    pattern = (tool_pattern or "").strip()
    if (
        not pattern
        or len(pattern) > MAX_PATTERN
        or any(ch.isspace() or not ch.isprintable() for ch in pattern)
    ):
        errors["tool"] = f"a tool name or glob (e.g. deploy*), up to {MAX_PATTERN} characters, no spaces"
    return f"tool:{server_id or '*'}:{pattern}"
