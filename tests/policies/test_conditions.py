"""The `--when` condition language: which calls a condition matches, and how a bad one is refused."""

from __future__ import annotations

from typing import Any

import pytest

from console.policies.conditions import ConditionError, parse


def matches(text: str, arguments: Any) -> bool | None:
    return parse(text).verdict(arguments)


def refusal(text: str) -> ConditionError:
    with pytest.raises(ConditionError) as caught:
        parse(text)
    return caught.value


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ('environment == "production"', {"environment": "production"}, True),
        ('environment == "production"', {"environment": "Production"}, False),
        ('environment == "production"', {"environment": ["production"]}, None),
        ('environment == "production"', {}, None),
        ('environment != "production"', {}, None),
        ("environment == 'production'", {"environment": "production"}, True),
        ('environment != "production"', {"environment": "staging"}, True),
        ("count == 1", {"count": 1.0}, True),
        ("count == 1.0", {"count": 1}, True),
        ("count == 1", {"count": "1"}, None),
        ("count == 1", {"count": True}, None),
        ("count != 1", {"count": True}, None),
        ("amount == 10000000000000000001", {"amount": 1e19}, False),
        ("dry_run == true", {"dry_run": True}, True),
        ("dry_run == true", {"dry_run": 1}, None),
        ("dry_run == false", {"dry_run": 0}, None),
        ("note == null", {}, True),
        ("note == null", {"note": None}, True),
        ("note == null", {"note": ""}, False),
        ("note != null", {"note": 0}, True),
        ('tags == ["a", "b"]', {"tags": ["a", "b"]}, True),
        ('tags == ["a", "b"]', {"tags": ["b", "a"]}, False),
        ("tags == []", {"tags": []}, True),
        ("sizes == [1, [2]]", {"sizes": [1.0, [2.0]]}, True),
        ("left == right", {"left": {"a": [1, {"b": None}]}, "right": {"a": [1.0, {"b": None}]}}, True),
        ("left == right", {"left": {"a": 1}, "right": {"a": 1, "b": 2}}, False),
    ],
)
def test_equality_is_json_equality(text: str, arguments: dict[str, Any], expected: bool | None) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ("amount > 1000", {"amount": 1001}, True),
        ("amount > 1000", {"amount": 1000}, False),
        ("amount > 1000", {"amount": 1000.5}, True),
        ("amount >= 1000", {"amount": 1000}, True),
        ("amount < -2.5e3", {"amount": -2501}, True),
        ("amount <= 5", {"amount": 5.0}, True),
        ('name < "m"', {"name": "alice"}, True),
        ('name >= "m"', {"name": "alice"}, False),
        ("amount > 1000", {"amount": "2000"}, None),
        ("amount < 1000", {"amount": "2"}, None),
        ("amount > 0", {"amount": True}, None),
        ("amount < 1", {"amount": None}, None),
        ("amount < 1", {}, None),
        ("amount >= 1", {"amount": [5]}, None),
        ("not amount > 1000", {}, None),
        ('1 > "a"', {}, False),
    ],
)
def test_ordering_holds_only_for_numbers_or_strings_on_both_sides(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ('currency in ["EUR", "USD"]', {"currency": "EUR"}, True),
        ('currency in ["EUR", "USD"]', {"currency": "GBP"}, False),
        ('currency in ["EUR", "USD"]', {}, None),
        ('currency not in ["EUR", "USD"]', {"currency": "GBP"}, True),
        ('currency not in ["EUR", "USD"]', {"currency": "USD"}, False),
        ('currency not in ["EUR", "USD"]', {}, None),
        ("level in [1, 2]", {"level": 2.0}, True),
        ("level in [1, 2]", {"level": True}, None),
        ("level in [1, 2]", {"level": 3}, False),
        ("level in []", {"level": True}, False),
        ('level in [1, "a"]', {"level": "b"}, False),
        ("level in [null]", {}, True),
        ("pair in [[1, 2]]", {"pair": [1, 2]}, True),
        ('"prod" in environment', {"environment": "production"}, True),
        ('"prod" in environment', {"environment": ["prod"]}, True),
        ('environment in "production-eu"', {"environment": "prod"}, True),
        ('environment in "production-eu"', {"environment": "staging"}, False),
        ('environment in "production-eu"', {"environment": 1}, None),
        ("environment in 5", {"environment": 5}, None),
        ("environment not in 5", {"environment": 5}, None),
    ],
)
def test_in_finds_list_items_and_substrings(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ('path matches "srv/*"', {"path": "srv/build/out.log"}, True),
        ('path matches "srv/*"', {"path": "etc/passwd"}, False),
        ('path matches "srv/*"', {"path": "SRV/x"}, False),
        ('path matches "srv/*"', {"path": 5}, None),
        ('path matches "srv/*"', {}, None),
        ('tool matches "deploy-?"', {"tool": "deploy-a"}, True),
        ('tool matches "deploy-?"', {"tool": "deploy-ab"}, False),
        ('tool matches "deploy-[ab]"', {"tool": "deploy-b"}, True),
        ('tool matches "deploy-[!ab]"', {"tool": "deploy-b"}, False),
        ("tool matches 'dep*'", {"tool": ["deploy"]}, None),
    ],
)
def test_matches_is_a_case_sensitive_shell_glob(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ('tags contains "urgent"', {"tags": ["low", "urgent"]}, True),
        ('tags contains "urgent"', {"tags": ["low"]}, False),
        ('tags contains "urgent"', {"tags": "not urgent at all"}, True),
        ('tags contains "urgent"', {"tags": {"urgent": True}}, None),
        ('tags contains "urgent"', {}, None),
        ("ids contains 2", {"ids": [1, 2.0]}, True),
        ("ids contains 2", {"ids": "123"}, None),
        ("ids contains 2", {"ids": ["2", True]}, False),
        ("ids contains null", {"ids": [None]}, True),
    ],
)
def test_contains_finds_an_item_of_a_list_or_a_part_of_a_string(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ('user.role == "admin"', {"user": {"role": "admin"}}, True),
        ('user["first name"] == "Ada"', {"user": {"first name": "Ada"}}, True),
        ("items[1].sku == 'B'", {"items": [{"sku": "A"}, {"sku": "B"}]}, True),
        ('headers["x-y"]["z"][0] == 1', {"headers": {"x-y": {"z": [1]}}}, True),
        ("user.role == null", {}, True),
        ("user.role == null", {"user": "admin"}, True),
        ("user.role == null", {"user": ["role"]}, True),
        ("items[5] == null", {"items": [1, 2]}, True),
        ("items[0] == null", {"items": {"0": "first"}}, True),
        ('items["0"] == "first"', {"items": {"0": "first"}}, True),
        ("items.sku == null", {"items": [{"sku": "A"}]}, True),
        ("user.role", {}, None),
    ],
)
def test_paths_step_into_objects_and_lists_and_lead_to_null_when_missing(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("text", "arguments", "expected"),
    [
        ("a or b and c", {"a": True, "b": False, "c": False}, True),
        ("(a or b) and c", {"a": True, "b": False, "c": False}, False),
        ("a and b or c", {"a": False, "b": True, "c": True}, True),
        ("a and (b or c)", {"a": False, "b": True, "c": True}, False),
        ("not a and b", {"a": False, "b": True}, True),
        ("not a and b", {"a": True, "b": True}, False),
        ("not (a and b)", {"a": True, "b": False}, True),
        ("not a or b", {"a": True, "b": False}, False),
        ("not a == 1", {"a": 2}, True),
        ("not not a", {"a": True}, True),
        ("((a))", {"a": True}, True),
    ],
)
def test_not_binds_tighter_than_and_which_binds_tighter_than_or(
    text: str, arguments: dict[str, Any], expected: bool | None
) -> None:
    assert matches(text, arguments) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), (1, None), ("yes", None), ("true", None), ([1], None), ({}, None)],
)
def test_a_value_alone_holds_when_true_fails_when_false_and_is_undecided_otherwise(
    value: Any, expected: bool | None
) -> None:
    assert matches("dry_run", {"dry_run": value}) is expected
    assert matches("not dry_run", {"dry_run": value}) is (None if expected is None else not expected)


def test_a_missing_argument_alone_is_undecided_and_a_literal_alone_is_decided() -> None:
    assert matches("dry_run", {}) is None
    assert matches("true", {}) is True
    assert matches("5", {}) is False


@pytest.mark.parametrize(
    ("text", "arguments"),
    [
        ("arguments.region == 'eu'", {"region": "eu"}),
        ('arguments["x-y"] == 1', {"x-y": 1}),
        ('arguments["and"] == true', {"and": True}),
        ('arguments["arguments"].in == 2', {"arguments": {"in": 2}}),
        ('arguments["True"] == "yes"', {"True": "yes"}),
        ('arguments[""] == 0', {"": 0}),
    ],
)
def test_the_arguments_root_reaches_any_argument_name(text: str, arguments: dict[str, Any]) -> None:
    assert matches(text, arguments) is True


def test_arguments_alone_is_not_a_value() -> None:
    error = refusal("arguments == 1")
    assert (error.message, error.position) == ("expected '.' or '[' after 'arguments', found '=='", 10)


@pytest.mark.parametrize("arguments", [None, [], "environment", 5, [("environment", "production")]])
def test_arguments_that_are_not_an_object_count_as_empty(arguments: Any) -> None:
    assert matches("environment == null", arguments) is True
    assert matches('environment == "production"', arguments) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r'name == "say \"hi\""', 'say "hi"'),
        (r"name == 'it\'s'", "it's"),
        (r'name == "a\\b"', "a\\b"),
        (r'name == "line\nnext\tcell"', "line\nnext\tcell"),
        (r'name == "caf\u00e9"', "café"),
        (r'name == "\ud83d\ude00"', "\U0001f600"),
        ("name == 'say \"hi\"'", 'say "hi"'),
    ],
)
def test_strings_understand_escapes(text: str, expected: str) -> None:
    assert matches(text, {"name": expected}) is True


@pytest.mark.parametrize(
    ("text", "value"),
    [("x == 42", 42), ("x == -7", -7), ("x == 0.25", 0.25), ("x == 1e3", 1000), ("x == -1.5E-2", -0.015)],
)
def test_numbers_are_read_exactly(text: str, value: float) -> None:
    assert matches(text, {"x": value}) is True


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("environment ==", 14, "expected a value, found the end"),
        ("environment ==   ", 17, "expected a value, found the end"),
        ("amount > > 1", 9, "expected a value, found '>'"),
        ("  amount > > 1", 11, "expected a value, found '>'"),
        ('name == "abc', 8, "this string is never closed"),
        ("name == 'abc\"", 8, "this string is never closed"),
        ("amount > 1 ; x", 11, "unexpected character ';'"),
        ("amount - 1 > 0", 7, "unexpected character '-'"),
        ('eval("x")', 0, "conditions have no functions ('eval' cannot be called)"),
        ('name.startswith("a")', 0, "conditions have no functions ('name' cannot be called)"),
        ("amount > 1 && x", 11, "write 'and' instead of '&&'"),
        ("a || b", 2, "write 'or' instead of '||'"),
        ("!a", 0, "write 'not' instead of '!'"),
        ("x = 1", 2, "write '==' instead of '='"),
        ("x == True", 5, "write 'true' instead of 'True'"),
        ("None != x", 0, "write 'null' instead of 'None'"),
        ("x is null", 2, "expected 'and', 'or' or the end, found 'is'"),
        ("a == 1 == 2", 7, "expected 'and', 'or' or the end, found '=='"),
        ("x == 1 2", 7, "expected 'and', 'or' or the end, found '2'"),
        ("a == 1)", 6, "expected 'and', 'or' or the end, found ')'"),
        ("(a == 1", 7, "expected 'and', 'or' or ')', found the end"),
        ("() or a", 1, "expected a value, found ')'"),
        ("and == 1", 0, "expected a value, found 'and'"),
        ("a and or b", 6, "expected a value, found 'or'"),
        ("x == 'a' 'b'", 9, "expected 'and', 'or' or the end, found a string"),
        (r'x == "\q"', 6, r"unknown escape '\\q'"),
        (r'x == "\u12G4"', 6, r"unknown escape '\\u'"),
        (r'x == "\ud83d"', 5, "a \\u escape names half a character"),
        ("x in [1, y]", 9, "expected a literal value (a list holds no arguments), found 'y'"),
        ("x in [1 2]", 8, "expected ',' or ']', found '2'"),
        ("x in [1,]", 8, "expected a literal value (a list holds no arguments), found ']'"),
        ("x in [1", 7, "expected ',' or ']', found the end"),
        ("x[-1] == 1", 2, "expected a quoted key or an index from 0, found '-1'"),
        ("x[1.5] == 1", 2, "expected a quoted key or an index from 0, found '1.5'"),
        ("x[y] == 1", 2, "expected a quoted key or an index from 0, found 'y'"),
        ('x["a" == 1', 6, "expected ']', found '=='"),
        ("x. == 1", 3, "expected a name after '.', found '=='"),
        ("x.1 == 1", 2, "expected a name after '.', found '1'"),
        ("x == 1.", 6, "expected 'and', 'or' or the end, found '.'"),
        ("x > 1e999", 4, "this number is too large"),
        ("tool matches pattern", 13, "expected a pattern in quotes, found 'pattern'"),
        ("tool matches 5", 13, "expected a pattern in quotes, found '5'"),
        ("x not 1", 2, "expected 'and', 'or' or the end, found 'not'"),
    ],
)
def test_invalid_conditions_are_refused_where_the_problem_is(text: str, position: int, message: str) -> None:
    error = refusal(text)
    assert (error.message, error.position) == (message, position)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_condition_is_refused(text: str) -> None:
    error = refusal(text)
    assert (error.message, error.position) == ("the condition is empty", 0)


def test_the_error_names_the_column_and_shows_the_text_around_it() -> None:
    error = refusal("environment ==")
    assert isinstance(error, ValueError)
    assert str(error) == "expected a value, found the end at column 15: 'environment =='"


def test_a_long_condition_is_shown_in_part_around_the_problem() -> None:
    text = 'region == "eu" and environment == "production" and amount > > 1000 and currency == "EUR"'
    error = refusal(text)
    assert error.position == text.index("> 1000")
    excerpt = "'... == \"production\" and amount > > 1000 and...'"
    assert str(error) == f"expected a value, found '>' at column 61: {excerpt}"


def test_the_text_is_kept_as_written_without_surrounding_whitespace() -> None:
    assert parse("  amount>1000 \n").text == "amount>1000"


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("a" * 1001, 1000, "the condition is longer than 1000 characters"),
        ("  " + "a" * 1001, 1002, "the condition is longer than 1000 characters"),
        ("(" * 33 + "a" + ")" * 33, 32, "the condition nests deeper than 32 levels"),
        ("not " * 33 + "a", 128, "the condition nests deeper than 32 levels"),
        ("x == " + "[" * 33 + "]" * 33, 37, "the condition nests deeper than 32 levels"),
        ("(" * 16 + "not " * 16 + "x == [1]" + ")" * 16, 85, "the condition nests deeper than 32 levels"),
        (" or ".join(["a"] * 101), 500, "there are more than 100 comparisons"),
        ("x == '" + "a" * 501 + "'", 5, "a string is longer than 500 characters"),
        ("x in [" + ",".join(["1"] * 101) + "]", 206, "a list has more than 100 items"),
    ],
)
def test_each_limit_is_refused_with_a_clear_error(text: str, position: int, message: str) -> None:
    error = refusal(text)
    assert (error.message, error.position) == (message, position)


@pytest.mark.parametrize(
    "text",
    [
        "  " + "a" * 1000 + "  ",
        "(" * 32 + "a" + ")" * 32,
        "not " * 32 + "a",
        "x == " + "[" * 32 + "]" * 32,
        " or ".join(["a"] * 100),
        "x == '" + "a" * 500 + "'",
        r"x == '" + r"\n" * 250 + "'",
        "x in [" + ",".join(["1"] * 100) + "]",
    ],
)
def test_conditions_at_each_limit_are_accepted(text: str) -> None:
    parse(text)


@pytest.mark.parametrize(
    ("text", "described"),
    [
        ('environment=="production"', 'environment == "production"'),
        ("environment == 'production'", 'environment == "production"'),
        ("amount>1000  and\ncurrency in['EUR','USD']", 'amount > 1000 and currency in ["EUR", "USD"]'),
        ("x not   in [ ]", "x not in []"),
        ("((a == 1))", "a == 1"),
        ("a or (b and c)", "a or b and c"),
        ("(a or b) and not (c and d)", "(a or b) and not (c and d)"),
        ("not(a)", "not a"),
        ("not (not a == 1)", "not not a == 1"),
        ("arguments.region == null", "region == null"),
        ('user["role"] == TRUE_VALUE', "user.role == TRUE_VALUE"),
        ('arguments["and"] == true', 'arguments["and"] == true'),
        ('arguments["x-y"]["z w"][0].in == false', 'arguments["x-y"]["z w"][0]["in"] == false'),
        (r"""x == 'it\'s "q"\n'""", 'x == "it\'s \\"q\\"\\n"'),
        (r'x == "\u0007\u00e9"', r'x == "\u0007é"'),
        ("x == 1.50", "x == 1.5"),
        ("x == 1E3", "x == 1000.0"),
        ("x == -0.5e-1", "x == -0.05"),
        ("tags contains 'a' or path matches 'srv/*'", 'tags contains "a" or path matches "srv/*"'),
    ],
)
def test_describe_writes_the_condition_as_a_person_reads_it(text: str, described: str) -> None:
    assert parse(text).describe() == described
    assert parse(described).describe() == described


def test_evaluation_survives_deeply_nested_arguments() -> None:
    deep: list[Any] = []
    same: list[Any] = []
    for _ in range(100_000):
        deep, same = [deep], [same]
    arguments = {"deep": deep, "same": same}
    assert matches("deep == same", arguments) is True
    assert matches("deep == [[[]]]", arguments) is False
    assert matches("deep contains 1", arguments) is False  # a list of lists holds no 1: decided
    assert matches("deep[0][0][0][0] != null", arguments) is True


def test_huge_arguments_are_evaluated_whole() -> None:
    arguments = {"ids": list(range(200_000)), "text": "ab" * 500_000, "other": list(range(200_000))}
    condition = parse(
        'ids contains 199999 and text matches "*abab*b" and text contains "ba" and ids == other'
    )
    assert condition.verdict(arguments) is True
    assert condition.verdict({**arguments, "other": [*range(199_999), -1]}) is False
