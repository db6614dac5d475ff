"""Layering a team's rules into one policy, trusting annotations only from trusted servers, and saying why."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.policies.rules import (
    Policy,
    check_values,
    combine,
    contradiction,
    describe,
    describe_rule,
    layers_for,
    policy_summary,
    refusal,
    step_up_refusal,
    treated_as_destructive,
)


@dataclass
class Rule:
    scope: str
    server_id: str | None = None
    tool_pattern: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    condition: str | None = None
    id: str = "rule"

    def values(self) -> dict[str, Any]:
        return self.settings


RULES = [
    Rule("tool", "srv-deploy", "deploy", {"step_up_minutes": 5}),
    Rule("tool", None, "deploy*", {"required_approvals": 3}),
    Rule("server", "srv-deploy", settings={"required_approvals": 2, "expiry_minutes": 60}),
    Rule("destructive", settings={"no_self_approval": True, "answerers": "approvers"}),
    Rule("team", settings={"answerers": "owner_or_approvers", "expiry_action": "decline"}),
    Rule("tool", None, "d*", {"expiry_minutes": 30}),
    Rule("server", "srv-other", settings={"required_approvals": 4}),
]


def resolve(tool: str | None, *, destructive: bool, server: str = "srv-deploy") -> tuple[Policy, list[str]]:
    layers = layers_for(RULES, server_id=server, server_name=server, tool=tool, destructive=destructive)
    policy, applied = combine(layers)
    return policy, [a["from"] for a in applied]


def test_layers_override_from_team_to_the_most_specific_tool_rule() -> None:
    policy, sources = resolve("deploy", destructive=True)
    assert sources == [
        "team default",
        "stricter default for destructive tools",
        "server srv-deploy",
        "tool rule d*",
        "tool rule deploy*",
        "tool rule deploy on srv-deploy",
    ]
    assert policy == Policy(
        answerers="approvers",
        no_self_approval=True,
        required_approvals=3,  # the team-wide tool glob beats the server override
        expiry_minutes=30,
        expiry_action="decline",
        step_up_minutes=5,
    )


def test_the_destructive_default_applies_only_to_destructive_tools() -> None:
    policy, sources = resolve("deploy", destructive=False)
    assert "stricter default for destructive tools" not in sources
    assert policy.answerers == "owner_or_approvers"
    assert not policy.no_self_approval


def test_rules_of_other_servers_and_other_tools_do_not_apply() -> None:
    policy, sources = resolve("status", destructive=False, server="srv-elsewhere")
    assert sources == ["team default"]
    assert policy == Policy(expiry_action="decline")


def test_a_server_rule_applies_to_prompts_and_resources_too() -> None:
    policy, sources = resolve(None, destructive=False, server="srv-other")
    assert sources == ["team default", "server srv-other"]
    assert policy.required_approvals == 4


def test_no_rules_give_the_defaults() -> None:
    assert combine([]) == (Policy(), [])


@pytest.mark.parametrize(
    ("method", "annotations", "trusted", "destructive"),
    [
        ("tools/call", {"destructiveHint": True}, True, True),
        ("tools/call", {"readOnlyHint": True}, True, False),
        ("tools/call", {"destructiveHint": False}, True, False),
        ("tools/call", {"readOnlyHint": False}, True, True),  # MCP's default: destructive
        ("tools/call", None, True, True),  # no annotations: MCP's defaults
        ("tools/call", {"readOnlyHint": True}, False, True),  # untrusted: its claims are ignored
        ("tools/call", {"destructiveHint": False}, False, True),
        ("prompts/get", None, False, False),
        ("resources/read", None, True, False),
    ],
)
def test_annotations_count_only_from_trusted_servers(
    method: str, annotations: dict[str, Any] | None, trusted: bool, destructive: bool
) -> None:
    assert treated_as_destructive(method, annotations, trusted) is destructive


@pytest.mark.parametrize(
    ("values", "field_name"),
    [
        ({"answerers": "everyone"}, "answerers"),
        ({"expiry_action": "accept"}, "expiry_action"),
        ({"required_approvals": 0}, "required_approvals"),
        ({"required_approvals": 11}, "required_approvals"),
        ({"required_approvals": True}, "required_approvals"),
        ({"expiry_minutes": 0}, "expiry_minutes"),
        ({"step_up_minutes": 24 * 60 + 1}, "step_up_minutes"),
        ({"no_self_approval": "yes"}, "no_self_approval"),
        ({"answerers": "owner", "required_approvals": 2}, "required_approvals"),
        ({"answerers": "owner", "no_self_approval": True}, "no_self_approval"),
    ],
)
def test_bad_rules_are_refused_field_by_field(values: dict[str, Any], field_name: str) -> None:
    assert list(check_values(values)) == [field_name]


def test_good_rules_pass_and_absent_fields_inherit() -> None:
    assert check_values({}) == {}
    assert check_values({"answerers": "approvers", "required_approvals": 2, "step_up_minutes": 5}) == {}
    assert check_values({"answerers": None, "expiry_minutes": None}) == {}


def test_contradictions_of_combined_layers_are_named() -> None:
    assert contradiction(Policy(answerers="owner", no_self_approval=True)) is not None
    assert contradiction(Policy(answerers="owner", required_approvals=2)) is not None
    assert contradiction(Policy(answerers="approvers", no_self_approval=True)) is None


OWNER_ONLY = "the policy lets only the run's owner answer it"
NOT_OWNER = "the policy lets only the team's approvers answer it, not the run's owner"
NO_SELF = "the policy forbids the run's owner from answering it (no self-approval)"
AUDITOR = "auditors can see this question but not answer it"
MEMBER = "only the team's approvers (or the run's owner, where the policy allows) can answer it"
URL = "a URL question can only be answered by the person whose agent made the call"


@pytest.mark.parametrize(
    ("answerers", "no_self", "who", "role", "expected"),
    [
        ("owner_or_approvers", False, "owner", "member", None),
        ("owner_or_approvers", False, "approver", "approver", None),
        ("owner_or_approvers", False, "admin", "admin", None),
        ("owner_or_approvers", False, "member", "member", MEMBER),
        ("owner_or_approvers", False, "auditor", "auditor", AUDITOR),
        ("owner", False, "owner", "member", None),
        ("owner", False, "approver", "approver", OWNER_ONLY),
        ("owner", False, "auditor", "auditor", AUDITOR),
        ("owner", False, "owner", "auditor", AUDITOR),
        ("owner_or_approvers", False, "owner", "auditor", AUDITOR),
        ("approvers", False, "owner", "member", NOT_OWNER),
        ("approvers", False, "owner", "approver", NOT_OWNER),
        ("approvers", False, "approver", "approver", None),
        ("owner_or_approvers", True, "owner", "approver", NO_SELF),
        ("owner_or_approvers", True, "approver", "approver", None),
    ],
)
def test_who_may_answer_a_form(
    answerers: str, no_self: bool, who: str, role: str, expected: str | None
) -> None:
    got = refusal(
        role=role, is_owner=who == "owner", mode="form", answerers=answerers, no_self_approval=no_self
    )
    assert got == expected


@pytest.mark.parametrize("answerers", ["owner", "approvers", "owner_or_approvers"])
@pytest.mark.parametrize("no_self", [False, True])
def test_url_questions_are_the_owners_whatever_the_policy(answerers: str, no_self: bool) -> None:
    def ask(role: str, is_owner: bool) -> str | None:
        return refusal(
            role=role, is_owner=is_owner, mode="url", answerers=answerers, no_self_approval=no_self
        )

    assert ask("member", True) is None
    assert ask("approver", False) == URL
    assert ask("admin", False) == URL
    assert ask("auditor", False) == AUDITOR
    assert ask("auditor", True) == AUDITOR  # an owner made auditor is read-only, even for their own link
    assert refusal(role=None, is_owner=False, mode="url", answerers=answerers, no_self_approval=no_self)


def test_step_up_needs_a_recent_sign_in_and_never_an_api_token() -> None:
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert step_up_refusal(None, None, now) is None
    assert step_up_refusal(5, now - timedelta(minutes=4, seconds=59), now) is None
    stale = step_up_refusal(5, now - timedelta(minutes=5, seconds=1), now)
    assert stale is not None
    assert "sign in again" in stale
    token = step_up_refusal(5, None, now)
    assert token is not None
    assert "not with an API token" in token


def test_the_policy_in_words() -> None:
    policy = Policy(
        answerers="approvers",
        no_self_approval=True,
        required_approvals=2,
        expiry_action="decline",
        step_up_minutes=5,
    )
    assert describe(policy, 24 * 60) == [
        "Only the team's approvers may answer, and not in their own runs (no self-approval).",
        "2 different people must approve the same answer.",
        "Unanswered after 1 day, it is declined.",
        "Deciding needs a sign-in within the last 5 minutes.",
    ]
    cancelled = "it is cancelled."
    assert describe(Policy(expiry_minutes=90), 60)[-1] == f"Unanswered after 90 minutes, {cancelled}"
    assert describe(Policy(), 0.5)[-1] == f"Unanswered after 30 seconds, {cancelled}"
    # "The owner or the approvers may answer" and "the owner may not answer" are one sentence, not two.
    assert describe(Policy(no_self_approval=True), 60)[0] == (
        "The team's approvers may answer, but not the run's owner (no self-approval)."
    )
    assert policy_summary(policy) == (
        "2 approvals from the team's approvers, not the requester, signed in within the last 5 minutes"
    )
    assert policy_summary(Policy()) == "One approval from the run's owner or the team's approvers"


def test_a_rule_in_words_says_only_what_it_sets_in_the_question_pages_sentences() -> None:
    everything: dict[str, Any] = {
        "answerers": "approvers",
        "no_self_approval": True,
        "required_approvals": 2,
        "expiry_minutes": 24 * 60,
        "expiry_action": "decline",
        "step_up_minutes": 5,
    }
    full = Policy(**everything)
    assert describe_rule(everything) == describe(full, 60)  # one wording for rules and questions
    assert describe_rule({"no_self_approval": False, "required_approvals": 1}) == [
        "The run's owner may answer questions of their own runs (self-approval allowed).",
        "One approval is enough.",
    ]
    assert describe_rule({"expiry_minutes": 90}) == ["Unanswered after 90 minutes, it expires."]
    assert describe_rule({"expiry_action": "cancel"}) == ["When it expires unanswered, it is cancelled."]
    assert describe_rule(dict.fromkeys(everything)) == []
