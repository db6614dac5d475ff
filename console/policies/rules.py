"""Pure policy logic: layering a team's rules into one effective policy, and who may answer.

Layers, later ones overriding earlier ones field by field:
team default → stricter default for destructive tools → server override → team-wide tool rules →
tool rules of that server. Among tool rules of one level, an exact name beats a glob and a longer
glob beats a shorter one. A rule with a condition on the arguments (console/policies/conditions.py)
applies only to calls that meet it, and then overrides the rules of its level that have none. A rule
whose condition cannot be decided on the call's arguments (a value of another kind than it compares, or
a missing one) applies only where it makes the policy stricter (`tighter`): it may gate, ask for more
approvals, forbid self-approval, leave the answer to approvers, shorten the step-up or forbid edits,
never the reverse. A call whose arguments a server may read as meeting the condition so never passes
with less than the rule asks.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from console.identity.viewer import ANSWERING_ROLES, READ_ONLY_ROLES
from console.policies.conditions import Condition, ConditionError, Verdict, parse

ANSWERERS = ("owner", "approvers", "owner_or_approvers")
EXPIRY_ACTIONS = ("cancel", "decline")
MAX_APPROVALS = 10
# Questions only the run's owner sees and answers, whatever the policy: a link the server sent them, and
# connecting their own account at an OAuth-protected server.
OWNER_ONLY_MODES = ("url", "connect")
MAX_EXPIRY_MINUTES = 365 * 24 * 60
MAX_STEP_UP_MINUTES = 24 * 60


@dataclass(frozen=True)
class Policy:
    """The rules one question is asked under; `expiry_minutes` None means the console's default."""

    answerers: str = "owner_or_approvers"
    no_self_approval: bool = False
    required_approvals: int = 1
    expiry_minutes: int | None = None
    expiry_action: str = "cancel"
    step_up_minutes: int | None = None
    gate: bool = False  # a tool call waits for approval before anything is sent
    allow_edit: bool = False  # approvers of a gate may change the arguments
    sampling: bool = False  # people answer the server's sampling requests (the console says it samples)
    # A question still unanswered after this many minutes is sent to `escalate_to` (see Escalation).
    escalate_after_minutes: int | None = None
    escalate_to: str | None = None

    @property
    def escalation(self) -> Escalation | None:
        """Whom to tell, and when, of a question nobody answered; None unless both are set."""
        if self.escalate_after_minutes is None or self.escalate_to is None:
            return None
        return Escalation.parse(self.escalate_to, self.escalate_after_minutes)


POLICY_FIELDS = tuple(f.name for f in fields(Policy))
MAX_ESCALATE_TO = 300


@dataclass(frozen=True)
class Escalation:
    """`escalate_to` is `role:approver` or `role:admin` (the team's members with that role) or a
    comma-separated list of user names. Only those of them who may answer the question are told."""

    after_minutes: int
    role: str | None = None
    users: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, after_minutes: int) -> Escalation | None:
        """None when `text` names no group (check_values says why)."""
        text = text.strip()
        if text.startswith("role:"):
            role = text.removeprefix("role:")
            return cls(after_minutes, role=role) if role in ANSWERING_ROLES else None
        names = tuple(name.strip() for name in text.split(","))
        if not text or len(text) > MAX_ESCALATE_TO or not all(_plain_name(n) for n in names):
            return None
        return cls(after_minutes, users=names)

    def words(self) -> str:
        group = f"the team's {self.role}s" if self.role else ", ".join(self.users)
        return f"Unanswered after {_duration(self.after_minutes)}, it is escalated to {group}."


def _plain_name(name: str) -> bool:
    return bool(name) and all(ch.isprintable() and not ch.isspace() for ch in name)


class RuleLike(Protocol):
    id: str
    scope: str
    server_id: str | None
    tool_pattern: str | None
    condition: str | None

    def values(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Layer:
    """One rule that applied, with a human label saying where it comes from; an `undecided` one's condition
    could not be decided on the call's arguments, so only what makes the policy stricter applies."""

    label: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    rule_id: str | None = None
    undecided: bool = False


UNDECIDED = " (undecided on these arguments: applied where stricter)"
# How strict each value of `answerers` is: leaving a decision to the team's approvers asks more than
# leaving it to the run's owner alone, which asks more than letting either answer.
_ANSWERERS_STRICTNESS = {"owner_or_approvers": 0, "owner": 1, "approvers": 2}


def tighter(name: str, current: Any, proposed: Any) -> bool:
    """Whether `proposed` makes the policy field `name` stricter than `current` (None: not set, the
    default applies). Fields that are no matter of strictness (expiry, sampling, escalation) never are."""
    default = getattr(Policy(), name, None)
    current = default if current is None else current
    if proposed is None or proposed == current:
        return False
    if name in ("gate", "no_self_approval"):
        return proposed is True
    if name == "allow_edit":
        return proposed is False
    if name == "required_approvals":
        return bool(proposed > current)
    if name == "step_up_minutes":
        return current is None or bool(proposed < current)
    if name == "answerers":
        return _ANSWERERS_STRICTNESS.get(proposed, -1) > _ANSWERERS_STRICTNESS.get(current, 0)
    return False


# The fields that say who must decide, and how: what an approver's edit may bring into force.
DECIDERS = ("answerers", "no_self_approval", "required_approvals", "step_up_minutes")


def strictest_deciders(policy: Policy, other: Policy) -> Policy:
    """`policy` with each field of `DECIDERS` that `other` makes stricter taken from `other`."""
    stricter = {
        name: getattr(other, name)
        for name in DECIDERS
        if tighter(name, getattr(policy, name), getattr(other, name))
    }
    return replace(policy, **stricter)


def check_values(values: Mapping[str, Any]) -> dict[str, str]:
    """Field errors of one rule's settings (fields absent or None inherit and are always fine)."""
    errors: dict[str, str] = {}
    answerers = values.get("answerers")
    if answerers is not None and answerers not in ANSWERERS:
        errors["answerers"] = f"must be one of {', '.join(ANSWERERS)}"
    action = values.get("expiry_action")
    if action is not None and action not in EXPIRY_ACTIONS:
        errors["expiry_action"] = f"must be one of {', '.join(EXPIRY_ACTIONS)}"
    bounds = {
        "required_approvals": (1, MAX_APPROVALS),
        "expiry_minutes": (1, MAX_EXPIRY_MINUTES),
        "step_up_minutes": (1, MAX_STEP_UP_MINUTES),
        "escalate_after_minutes": (1, MAX_EXPIRY_MINUTES),
    }
    for name, (low, high) in bounds.items():
        value = values.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high
        ):
            errors[name] = f"must be a whole number from {low} to {high}"
    for name in ("no_self_approval", "gate", "allow_edit", "sampling"):
        flag = values.get(name)
        if flag is not None and not isinstance(flag, bool):
            errors[name] = "must be true or false"
    group = values.get("escalate_to")
    if group is not None and (not isinstance(group, str) or Escalation.parse(group, 1) is None):
        errors["escalate_to"] = (
            f"role:{' or role:'.join(ANSWERING_ROLES)}, or user names separated by commas "
            f"(at most {MAX_ESCALATE_TO} characters)"
        )
    if answerers == "owner" and (values.get("required_approvals") or 1) > 1:
        errors["required_approvals"] = "only one person can answer when only the owner may answer"
    if answerers == "owner" and values.get("no_self_approval"):
        errors["no_self_approval"] = "contradicts 'only the owner may answer': nobody could answer"
    return errors


def contradiction(policy: Policy) -> str | None:
    """Why nobody could answer a form question under this combined policy, if so."""
    if policy.answerers == "owner" and policy.no_self_approval:
        return "only the owner may answer, yet the owner may not answer their own run"
    if policy.answerers == "owner" and policy.required_approvals > 1:
        return "only the owner may answer, yet several approvals are required"
    return None


def treated_as_destructive(method: str, annotations: Mapping[str, Any] | None, trusted: bool) -> bool:
    """Whether a call gets the team's stricter default for destructive tools.

    Annotations of untrusted servers are ignored, which leaves MCP's defaults: a tool may be
    destructive unless a trusted server says it is read-only or not destructive.
    """
    if method != "tools/call":
        return False
    if not trusted or annotations is None:
        return True
    if annotations.get("readOnlyHint") is True:
        return False
    return annotations.get("destructiveHint", True) is not False


def layers_for(
    rules: Iterable[RuleLike],
    *,
    server_id: str,
    server_name: str,
    tool: str | None,
    destructive: bool,
    arguments: Mapping[str, Any] | None = None,
) -> list[Layer]:
    """The rules that apply to one call (whose `arguments` the rules' conditions look at), in the order
    they override each other."""
    arguments = arguments or {}
    verdicts = {id(rule): _verdict(rule.condition, arguments) for rule in rules}
    rules = [rule for rule in rules if verdicts[id(rule)] is not False]
    ordered: list[Layer] = []

    def add(level: list[RuleLike], label: str) -> None:
        for rule in sorted(level, key=lambda r: r.condition is not None):  # stable: conditions last
            when = f" when {condition_text(rule.condition)}" if rule.condition is not None else ""
            undecided = verdicts[id(rule)] is None
            label_of = label + when + (UNDECIDED if undecided else "")
            ordered.append(Layer(label_of, rule.values(), rule.id, undecided))

    add([r for r in rules if r.scope == "team"], "team default")
    if destructive:
        add([r for r in rules if r.scope == "destructive"], "stricter default for destructive tools")
    add([r for r in rules if r.scope == "server" and r.server_id == server_id], f"server {server_name}")
    if tool is not None:
        for scope_server in (None, server_id):
            matching = [
                r
                for r in rules
                if r.scope == "tool"
                and r.server_id == scope_server
                and r.tool_pattern is not None
                and fnmatch.fnmatchcase(tool, r.tool_pattern)
            ]
            for pattern in sorted({r.tool_pattern or "" for r in matching}, key=_specificity):
                where = "" if scope_server is None else f" on {server_name}"
                add([r for r in matching if r.tool_pattern == pattern], f"tool rule {pattern}{where}")
    return ordered


def _specificity(pattern: str) -> tuple[bool, int]:
    return (not any(ch in pattern for ch in "*?["), len(pattern))


@lru_cache(maxsize=1024)
def _parsed(text: str) -> Condition | None:
    try:
        return parse(text)
    except ConditionError:
        return None


def _verdict(text: str | None, arguments: Mapping[str, Any]) -> Verdict:
    if text is None:
        return True
    condition = _parsed(text)
    # Saved conditions were checked when saved; one that no longer parses keeps its rule in force.
    return True if condition is None else condition.verdict(arguments)


def condition_text(text: str | None) -> str:
    """A rule's condition as people read it."""
    if text is None:
        return ""
    condition = _parsed(text)
    return text if condition is None else condition.describe()


def combine(layers: Sequence[Layer]) -> tuple[Policy, list[dict[str, Any]]]:
    """The effective policy and, for the question page, which layer set what."""
    values: dict[str, Any] = {}
    applied: list[dict[str, Any]] = []
    for layer in layers:
        settings = {k: v for k, v in layer.settings.items() if k in POLICY_FIELDS and v is not None}
        if layer.undecided:
            settings = {k: v for k, v in settings.items() if tighter(k, values.get(k), v)}
        if settings:
            values.update(settings)
            applied.append({"from": layer.label, "set": settings, "rule": layer.rule_id})
    return Policy(**values), applied


def gate_rule(applied: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The applied layer that put the gate in place (the last to set it), if the call is gated."""
    for layer in reversed(applied):
        gate = layer.get("set", {}).get("gate")
        if gate is not None:
            return layer if gate else None
    return None


def refusal(
    *, role: str | None, is_owner: bool, mode: str, answerers: str, no_self_approval: bool
) -> str | None:
    """Why this person may not answer the question, or None when they may."""
    if role is None:
        return "you are not a member of this question's team"
    if role in READ_ONLY_ROLES:  # before ownership: an owner later made an auditor is read-only too
        return "auditors can see this question but not answer it"
    if mode in OWNER_ONLY_MODES:
        if is_owner:
            return None
        what = "a URL question" if mode == "url" else "connecting an account"
        return f"{what} can only be answered by the person whose agent made the call"
    if is_owner:
        if no_self_approval:
            return "the policy forbids the run's owner from answering it (no self-approval)"
        if answerers == "approvers":
            return "the policy lets only the team's approvers answer it, not the run's owner"
        return None
    if answerers == "owner":
        return "the policy lets only the run's owner answer it"
    if role not in ANSWERING_ROLES:
        return "only the team's approvers (or the run's owner, where the policy allows) can answer it"
    return None


def step_up_refusal(
    step_up_minutes: int | None, authenticated_at: datetime | None, now: datetime
) -> str | None:
    """Why a decision needs a fresh sign-in first, or None when the sign-in is recent enough."""
    if step_up_minutes is None:
        return None
    if authenticated_at is None:
        return (
            f"this question needs a sign-in within the last {step_up_minutes} minutes: "
            "answer it in the console, not with an API token"
        )
    if now - authenticated_at > timedelta(minutes=step_up_minutes):
        return f"this question needs a sign-in within the last {step_up_minutes} minutes; sign in again"
    return None


WHO_ANSWERS = {
    "owner": "Only the run's owner may answer.",
    "approvers": "Only the team's approvers may answer.",
    "owner_or_approvers": "The run's owner or the team's approvers may answer.",
}
# With no self-approval, "the run's owner or the approvers" narrows to the approvers: one sentence says both.
APPROVERS_NOT_OWNER = "The team's approvers may answer, but not the run's owner (no self-approval)."
SELF_APPROVAL = {
    True: "The run's owner may not answer questions of their own runs (no self-approval).",
    False: "The run's owner may answer questions of their own runs (self-approval allowed).",
}
# What an unanswered question becomes, in the words the agent's side sees it.
EXPIRY_WORDS = {
    "cancel": "it is cancelled",
    "decline": "it is declined",
}
WHO_DECIDES = {
    "owner": "the run's owner",
    "approvers": "the team's approvers",
    "owner_or_approvers": "the run's owner or the team's approvers",
}
GATE = {
    True: "A tool call waits for approval before it is sent (gate).",
    False: "Tool calls are sent without asking first (no gate).",
}
SAMPLING = {
    True: "People answer the server's sampling requests: they write the model's reply.",
    False: "The server is not offered sampling.",
}
EDITING = {
    True: "Approvers of a gate may change the arguments.",
    False: "Approvers of a gate approve the arguments as sent.",
}


def describe(policy: Policy, default_expiry_minutes: float, *, expiry_abandons: bool = False) -> list[str]:
    """The policy in plain sentences, as the question page shows it; with `expiry_abandons`, for a question
    whose call ends when it is not answered (a sampling request: MCP has no reply that says no)."""
    lines = [_who_answers(policy.answerers, policy.no_self_approval)]
    if policy.required_approvals > 1:
        lines.append(_approvals(policy.required_approvals))
    minutes = policy.expiry_minutes if policy.expiry_minutes is not None else default_expiry_minutes
    if expiry_abandons:
        lines.append(f"Unanswered after {_duration(minutes)}, the call is abandoned.")
    else:
        lines.append(_expiry(minutes, policy.expiry_action))
    if policy.step_up_minutes is not None:
        lines.append(_step_up(policy.step_up_minutes))
    if policy.escalation is not None:
        lines.append(policy.escalation.words())
    return lines


def describe_rule(settings: Mapping[str, Any]) -> list[str]:
    """What one layer of a team's policy sets, in the question page's words (a field left out inherits)."""
    lines: list[str] = []
    if settings.get("gate") is not None:
        lines.append(GATE[bool(settings["gate"])])
    if settings.get("allow_edit") is not None:
        lines.append(EDITING[bool(settings["allow_edit"])])
    if settings.get("sampling") is not None:
        lines.append(SAMPLING[bool(settings["sampling"])])
    answerers, no_self = settings.get("answerers"), settings.get("no_self_approval")
    if answerers in WHO_ANSWERS:
        lines.append(_who_answers(answerers, bool(no_self)))
    if no_self is not None and not (answerers in WHO_ANSWERS and no_self):
        lines.append(SELF_APPROVAL[bool(no_self)])
    if settings.get("required_approvals") is not None:
        lines.append(_approvals(settings["required_approvals"]))
    minutes, action = settings.get("expiry_minutes"), settings.get("expiry_action")
    if minutes is not None and action is not None:
        lines.append(_expiry(minutes, action))
    elif minutes is not None:
        lines.append(f"Unanswered after {_duration(minutes)}, it expires.")
    elif action is not None:
        lines.append(f"When it expires unanswered, {expiry_outcome(action)}.")
    if settings.get("step_up_minutes") is not None:
        lines.append(_step_up(settings["step_up_minutes"]))
    after, group = settings.get("escalate_after_minutes"), settings.get("escalate_to")
    escalation = Escalation.parse(group, after) if after is not None and group is not None else None
    if escalation is not None:
        lines.append(escalation.words())
    elif after is not None:
        lines.append(f"Unanswered after {_duration(after)}, it is escalated.")
    elif group is not None:
        lines.append(f"Escalations go to {group}.")
    return lines


def _approvals(count: int) -> str:
    if count == 1:
        return "One approval is enough."
    return f"{count} different people must approve the same answer."


def _expiry(minutes: float, action: str) -> str:
    return f"Unanswered after {_duration(minutes)}, {expiry_outcome(action)}."


def expiry_outcome(action: str) -> str:
    """What an unanswered question becomes: "it is declined"."""
    return EXPIRY_WORDS.get(action, f"it is answered {action}")


def _who_answers(answerers: str, no_self_approval: bool) -> str:
    if no_self_approval and answerers == "owner_or_approvers":
        return APPROVERS_NOT_OWNER
    if no_self_approval and answerers == "approvers":
        return "Only the team's approvers may answer, and not in their own runs (no self-approval)."
    return WHO_ANSWERS[answerers]


def policy_summary(policy: Policy) -> str:
    """The policy in one line, as the top of the question page says it: "2 approvals from the team's
    approvers, not the requester, signed in within the last 5 minutes"."""
    count = policy.required_approvals
    who = WHO_DECIDES["approvers" if policy.no_self_approval else policy.answerers]
    words = f"{'One approval' if count == 1 else f'{count} approvals'} from {who}"
    if policy.no_self_approval:
        words += ", not the requester"
    if policy.step_up_minutes is not None:
        words += f", signed in within the last {policy.step_up_minutes} minutes"
    return words


def _step_up(minutes: int) -> str:
    return f"Deciding needs a sign-in within the last {minutes} minutes."


def _duration(minutes: float) -> str:
    if minutes % (24 * 60) == 0:
        days = int(minutes // (24 * 60))
        return f"{days} day{'s' if days != 1 else ''}"
    if minutes % 60 == 0:
        hours = int(minutes // 60)
        return f"{hours} hour{'s' if hours != 1 else ''}"
    if minutes >= 1 and minutes == int(minutes):
        return f"{int(minutes)} minute{'s' if minutes != 1 else ''}"
    return f"{round(minutes * 60)} seconds"
