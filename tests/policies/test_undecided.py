"""Conditions fail closed: a rule whose condition cannot be decided on the arguments (a value of another
kind than it compares, or a missing one) applies where it makes the policy stricter and nowhere else,
so a call that a server built on the official SDK would read as meeting a gate's condition is gated."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from console.policies.conditions import parse
from console.policies.rules import Policy, combine, layers_for, strictest_deciders, tighter
from tests.policies.test_rules import Rule

SERVER = "srv-pay"


def resolve(rules: list[Rule], arguments: Any) -> tuple[Policy, list[str]]:
    layers = layers_for(
        rules,
        server_id=SERVER,
        server_name="pay",
        tool="send_payment",
        destructive=False,
        arguments=arguments,
    )
    policy, applied = combine(layers)
    return policy, [a["from"] for a in applied]


PAYMENT_GATES = [
    Rule("tool", SERVER, "send_payment", {"gate": True}, "amount > 1000", id="r1"),
    Rule("tool", SERVER, "send_payment", {"gate": True, "required_approvals": 2}, "amount > 100000", id="r2"),
]


@pytest.mark.parametrize("amount", ["500000", [500000], {"value": 500000}, True, None])
def test_an_amount_of_another_kind_is_gated_for_two_approvers_like_a_large_one(amount: Any) -> None:
    policy, sources = resolve(PAYMENT_GATES, {"amount": amount})
    assert (policy.gate, policy.required_approvals) == (True, 2)
    undecided = " (undecided on these arguments: applied where stricter)"
    assert sources == [
        "tool rule send_payment on pay when amount > 1000" + undecided,
        "tool rule send_payment on pay when amount > 100000" + undecided,
    ]


def test_a_missing_amount_is_gated_too() -> None:
    policy, _ = resolve(PAYMENT_GATES, {})
    assert (policy.gate, policy.required_approvals) == (True, 2)


@pytest.mark.parametrize(
    ("amount", "gated", "approvals"), [(500, False, 1), (5000, True, 1), (500000, True, 2)]
)
def test_numbers_are_decided_as_written(amount: int, gated: bool, approvals: int) -> None:
    policy, sources = resolve(PAYMENT_GATES, {"amount": amount})
    assert (policy.gate, policy.required_approvals) == (gated, approvals)
    assert not any("undecided" in source for source in sources)


def test_an_undecided_rule_never_lifts_a_gate() -> None:
    rules = [
        Rule("team", settings={"gate": True}, id="team"),
        Rule("tool", SERVER, "send_payment", {"gate": False}, 'environment == "staging"', id="lift"),
    ]
    assert resolve(rules, {"environment": "staging"})[0].gate is False
    assert resolve(rules, {"environment": "production"})[0].gate is True
    for undecided in (["staging"], {"name": "staging"}, 1, None):
        assert resolve(rules, {"environment": undecided})[0].gate is True
    assert resolve(rules, {})[0].gate is True


def test_an_undecided_rule_applies_only_what_makes_the_policy_stricter() -> None:
    base: dict[str, Any] = {
        "gate": True,
        "required_approvals": 2,
        "answerers": "approvers",
        "step_up_minutes": 5,
        "no_self_approval": True,
    }
    loosening: dict[str, Any] = {
        "gate": False,
        "required_approvals": 1,
        "answerers": "owner_or_approvers",
        "step_up_minutes": 60,
        "no_self_approval": False,
        "allow_edit": True,
        "expiry_minutes": 5,
    }
    rules = [Rule("team", settings=base, id="team"), Rule("tool", SERVER, "*", loosening, "amount < 10")]
    assert resolve(rules, {"amount": 5})[0] == Policy(**loosening)
    policy, sources = resolve(rules, {"amount": "5"})
    assert policy == Policy(**base)
    assert sources == ["team default"]  # the undecided rule set nothing: every field it sets is looser


def test_an_undecided_rule_tightens_field_by_field() -> None:
    rules = [
        Rule(
            "team", settings={"required_approvals": 3, "allow_edit": True, "step_up_minutes": 30}, id="team"
        ),
        Rule(
            "tool",
            SERVER,
            "*",
            {"required_approvals": 2, "allow_edit": False, "step_up_minutes": 10, "answerers": "approvers"},
            "region in ['eu', 'us']",
            id="regional",
        ),
    ]
    policy, sources = resolve(rules, {"region": 7})
    assert (policy.required_approvals, policy.allow_edit, policy.step_up_minutes, policy.answerers) == (
        3,
        False,
        10,
        "approvers",
    )
    assert sources[-1].endswith("(undecided on these arguments: applied where stricter)")


@pytest.mark.parametrize(
    ("name", "current", "proposed", "stricter"),
    [
        ("gate", False, True, True),
        ("gate", True, False, False),
        ("required_approvals", None, 2, True),
        ("required_approvals", 3, 2, False),
        ("no_self_approval", None, True, True),
        ("allow_edit", True, False, True),
        ("allow_edit", None, True, False),
        ("step_up_minutes", None, 60, True),
        ("step_up_minutes", 5, 60, False),
        ("answerers", None, "approvers", True),
        ("answerers", "owner", "approvers", True),
        ("answerers", "approvers", "owner", False),
        ("expiry_minutes", 60, 5, False),
        ("sampling", False, True, False),
    ],
)
def test_what_counts_as_stricter(name: str, current: Any, proposed: Any, stricter: bool) -> None:
    assert tighter(name, current, proposed) is stricter


def test_the_strictest_deciders_of_two_policies_take_each_field_from_the_stricter() -> None:
    one = Policy(gate=True, required_approvals=2, step_up_minutes=30, allow_edit=True)
    other = Policy(required_approvals=1, no_self_approval=True, step_up_minutes=10, answerers="approvers")
    assert strictest_deciders(one, other) == Policy(
        gate=True,
        required_approvals=2,
        no_self_approval=True,
        step_up_minutes=10,
        answerers="approvers",
        allow_edit=True,  # who decides, not what they may do: the edit was allowed by the first policy
    )


@pytest.mark.parametrize(
    ("text", "arguments", "verdict"),
    [
        ("a > 1 and b == 2", {"b": 3}, False),
        ("a > 1 and b == 2", {"b": 2}, None),
        ("a > 1 or b == 2", {"b": 2}, True),
        ("a > 1 or b == 2", {"b": 3}, None),
        ("not (a > 1)", {}, None),
        ("not (a > 1 and b == 2)", {"b": 3}, True),
    ],
)
def test_undecided_comparisons_combine_by_three_valued_logic(
    text: str, arguments: dict[str, Any], verdict: bool | None
) -> None:
    assert parse(text).verdict(arguments) is verdict


# Properties. A server built on the official SDK reads a tool's arguments with pydantic's lax mode: it
# takes "500000" (or " 5e5 ") for the number 500000, and `yes` or 1 for true. Whatever the agent sends,
# a call that such a server would read as one a gate covers must be gated.
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**7), max_value=10**7)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e7, max_value=1e7)
    | st.text(max_size=8)
    | st.integers(min_value=-(10**7), max_value=10**7).map(str)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e7, max_value=1e7).map(
        lambda f: f" {f!r} "
    )
    | st.sampled_from(["yes", "no", "true", "false", "on", "0", "1", "1e6", "1_000_000", "eu", "prod"])
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children),
)
READERS: dict[str, TypeAdapter[Any]] = {
    "number": TypeAdapter(int | float),
    "string": TypeAdapter(str),
    "boolean": TypeAdapter(bool),
}
LITERALS = {
    "number": st.integers(min_value=-1000, max_value=100000).map(str),
    "string": st.sampled_from(['"eu"', '"prod"', '"1000"', '""', '"yes"']),
    "boolean": st.sampled_from(["true", "false"]),
}
ORDERED = ("<", "<=", ">", ">=")


def conditions(kind: str) -> st.SearchStrategy[str]:
    """Conditions on the one argument `v`, comparing it with values of one kind (the kind its schema
    gives it), combined with not, and and or."""
    literal = LITERALS[kind]
    operators = ("==", "!=", *(ORDERED if kind != "boolean" else ()))
    comparison = st.builds(lambda op, lit: f"v {op} {lit}", st.sampled_from(operators), literal)
    membership = st.builds(
        lambda word, items: f"v {word} [{', '.join(items)}]",
        st.sampled_from(["in", "not in"]),
        st.lists(literal, min_size=1, max_size=3),
    )
    atoms = comparison | membership | (st.just("v") if kind == "boolean" else comparison)
    return st.recursive(
        atoms,
        lambda inner: (
            st.builds(lambda c: f"not ({c})", inner)
            | st.builds(lambda a, b, w: f"({a}) {w} ({b})", inner, inner, st.sampled_from(["and", "or"]))
        ),
        max_leaves=4,
    )


def read(kind: str, value: Any) -> tuple[bool, Any]:
    """What a schema-following server reads the value as (False when it refuses it)."""
    try:
        return True, READERS[kind].validate_python(value)
    except ValidationError:
        return False, None


@st.composite
def gated_tool(draw: st.DrawFn) -> tuple[str, list[Rule]]:
    kind = draw(st.sampled_from(sorted(READERS)))
    rules = [Rule("tool", None, "send_*", {"gate": True}, draw(conditions(kind)), id="gates")]
    if draw(st.booleans()):  # a more specific rule that lifts the gate when its own condition is met
        rules.append(
            Rule("tool", SERVER, "send_payment", {"gate": False}, draw(conditions(kind)), id="lifts")
        )
    return kind, rules


PROPERTY = settings(
    max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(st.integers(min_value=0, max_value=10**6), JSON_VALUES)
def test_a_value_a_server_reads_as_above_the_threshold_is_never_sent_ungated(
    threshold: int, value: Any
) -> None:
    rules = [Rule("tool", SERVER, "send_payment", {"gate": True}, f"amount > {threshold}")]
    readable, number = read("number", value)
    if readable and number > threshold:
        assert resolve(rules, {"amount": value})[0].gate is True
    nested = [Rule("tool", SERVER, "send_payment", {"gate": True}, f"order.amount > {threshold}")]
    if readable and number > threshold:
        assert resolve(nested, {"order": {"amount": value}})[0].gate is True


@PROPERTY
@given(gated_tool(), JSON_VALUES)
def test_whenever_the_value_the_server_reads_would_be_gated_the_value_sent_is_gated(
    tool: tuple[str, list[Rule]], value: Any
) -> None:
    kind, rules = tool
    readable, as_read = read(kind, value)
    if readable and resolve(rules, {"v": as_read})[0].gate:
        assert resolve(rules, {"v": value})[0].gate is True


@PROPERTY
@given(
    st.sampled_from(sorted(READERS)).flatmap(lambda kind: st.tuples(st.just(kind), conditions(kind))),
    JSON_VALUES,
)
def test_a_decided_verdict_is_the_verdict_on_what_the_server_reads(
    condition: tuple[str, str], value: Any
) -> None:
    kind, text = condition
    verdict = parse(text).verdict({"v": value})
    readable, as_read = read(kind, value)
    if verdict is not None and readable:
        assert parse(text).verdict({"v": as_read}) is verdict
