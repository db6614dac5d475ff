from collections.abc import Sequence

import pytest

from console.forms import FieldSpec, Option, defaults, parse_form_data, parse_schema, validate_content
from tests.forms.schemas import DEPLOY_SCHEMA

DEPLOY = parse_schema(DEPLOY_SCHEMA)


def field(prop: dict[str, object], required: bool = True) -> tuple[FieldSpec, ...]:
    return parse_schema({"type": "object", "properties": {"f": prop}, "required": ["f"] if required else []})


def check(prop: dict[str, object], value: object) -> tuple[dict[str, object], dict[str, str]]:
    return validate_content(field(prop), {"f": value})


def error_for(prop: dict[str, object], value: object) -> str | None:
    return check(prop, value)[1].get("f")


def test_deploy_answer_is_accepted_as_given() -> None:
    assert validate_content(DEPLOY, {"environment": "production", "confirm": True}) == (
        {"environment": "production", "confirm": True},
        {},
    )


def test_deploy_answer_without_confirm_is_missing_a_required_field() -> None:
    assert validate_content(DEPLOY, {"environment": "staging"})[1] == {"confirm": "is required"}


def test_deploy_answer_reports_every_bad_field_at_once() -> None:
    _, errors = validate_content(DEPLOY, {"environment": "dev", "confirm": "true"})
    assert errors == {
        "environment": "must be one of: staging, production",
        "confirm": "must be true or false",
    }


@pytest.mark.parametrize("content", [None, [], "{}", 3, True, [["environment", "staging"]]])
def test_content_that_is_not_an_object_is_a_whole_form_error(content: object) -> None:
    assert validate_content(DEPLOY, content) == ({}, {"": "content must be a JSON object"})


def test_unknown_fields_are_listed_in_the_whole_form_error() -> None:
    clean, errors = validate_content(DEPLOY, {"environment": "staging", "confirm": True, "x": 1, "<y>": 2})
    assert errors == {"": "unknown fields: x, <y>"}
    assert clean == {"environment": "staging", "confirm": True}


def test_many_unknown_fields_are_summarised() -> None:
    content: dict[str, object] = {f"u{i}": 1 for i in range(25)}
    content |= {"environment": "staging", "confirm": False}
    _, errors = validate_content(DEPLOY, content)
    assert errors[""] == "unknown fields: " + ", ".join(f"u{i}" for i in range(10)) + " and 15 more"


def test_optional_fields_may_be_left_out_and_are_not_filled_with_defaults() -> None:
    fields = field({"type": "string", "default": "x"}, required=False)
    assert validate_content(fields, {}) == ({}, {})


def test_null_is_not_an_answer_even_for_an_optional_field() -> None:
    fields = field({"type": "string"}, required=False)
    assert validate_content(fields, {"f": None})[1] == {"f": "must be a string"}


def test_empty_form_accepts_only_an_empty_object() -> None:
    assert validate_content((), {}) == ({}, {})
    assert validate_content((), {"a": 1})[1] == {"": "unknown fields: a"}


@pytest.mark.parametrize(
    "name", ["a\"b'c", "<script>alert(1)</script>", "名前 ✓", "line\nbreak", "__proto__", "constructor"]
)
def test_hostile_field_names_are_plain_keys(name: str) -> None:
    fields = parse_schema({"type": "object", "properties": {name: {"type": "string"}}, "required": [name]})
    assert validate_content(fields, {name: "v"}) == ({name: "v"}, {})
    assert validate_content(fields, {})[1] == {name: "is required"}


STRING_CASES: list[tuple[str, dict[str, object], object, str | None]] = [
    ("plain", {"type": "string"}, "hello", None),
    ("empty-allowed", {"type": "string"}, "", None),
    ("not-a-string", {"type": "string"}, 5, "must be a string"),
    ("list", {"type": "string"}, ["a"], "must be a string"),
    ("min-length-met", {"type": "string", "minLength": 2}, "ab", None),
    ("too-short", {"type": "string", "minLength": 3}, "ab", "must be at least 3 characters"),
    ("too-short-singular", {"type": "string", "minLength": 1}, "", "must be at least 1 character"),
    ("max-length-met", {"type": "string", "maxLength": 10}, "a" * 10, None),
    ("too-long", {"type": "string", "maxLength": 10}, "a" * 11, "must be at most 10 characters"),
    ("emoji-count-as-one", {"type": "string", "maxLength": 2}, "😀😀", None),
    (
        "accented-count-per-code-point",
        {"type": "string", "maxLength": 1},
        "e\u0301",
        "must be at most 1 character",
    ),
]


@pytest.mark.parametrize(
    ("prop", "value", "error"),
    [pytest.param(prop, value, error, id=case) for case, prop, value, error in STRING_CASES],
)
def test_string_rules(prop: dict[str, object], value: object, error: str | None) -> None:
    assert error_for(prop, value) == error


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("ops@example.com", True),
        ("first.last+tag@mail.example.co.uk", True),
        ("ünïcode@exämple.org", True),
        ("no-at-sign.example.com", False),
        ("@example.com", False),
        ("two@@example.com", False),
        ("a@b@example.com", False),
        ("ops@localhost", False),
        ("ops@.example.com", False),
        ("ops@example.com.", False),
        ("ops@example..com", False),
        ("ops @example.com", False),
        ("ops@example.com\n", False),
        ("", False),
    ],
)
def test_email_format(value: str, valid: bool) -> None:
    error = error_for({"type": "string", "format": "email"}, value)
    assert error == (None if valid else "must be a valid email address")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("https://example.com/path?q=1#x", True),
        ("mailto:ops@example.com", True),
        ("urn:isbn:0451450523", True),
        ("git+ssh://git@example.com/repo", True),
        ("example.com/path", False),
        ("/relative/path", False),
        ("https:", False),
        ("://example.com", False),
        ("1http://example.com", False),
        ("https://example.com/a b", False),
        ("https://example.com/\x00", False),
        ("", False),
    ],
)
def test_uri_format(value: str, valid: bool) -> None:
    error = error_for({"type": "string", "format": "uri"}, value)
    assert error == (None if valid else "must be an absolute URI, e.g. https://example.com/")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2026-07-28", True),
        ("2024-02-29", True),
        ("2026-02-29", False),
        ("2026-13-01", False),
        ("20260728", False),
        ("2026-W31-2", False),
        ("2026-7-28", False),
        ("2026-07-28T00:00:00Z", False),
        ("２０２６-07-28", False),
        ("", False),
    ],
)
def test_date_format(value: str, valid: bool) -> None:
    error = error_for({"type": "string", "format": "date"}, value)
    assert error == (None if valid else "must be a date as YYYY-MM-DD")


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("2026-07-28T09:30:00Z", True),
        ("2026-07-28t09:30:00z", True),
        ("2026-07-28T09:30:00.123456789+02:00", True),
        ("2026-07-28T09:30:00-05:30", True),
        ("2016-12-31T23:59:60Z", True),
        ("2026-07-28T09:30:00", False),
        ("2026-07-28 09:30:00Z", False),
        ("2026-07-28T09:30Z", False),
        ("2026-07-28T24:00:00Z", False),
        ("2026-07-28T09:60:00Z", False),
        ("2026-07-28T09:30:61Z", False),
        ("2026-02-30T09:30:00Z", False),
        ("2026-07-28T09:30:00+24:00", False),
        ("2026-07-28T09:30:00+0200", False),
        ("2026-07-28", False),
    ],
)
def test_date_time_format_needs_rfc_3339_with_an_offset(value: str, valid: bool) -> None:
    error = error_for({"type": "string", "format": "date-time"}, value)
    assert error == (None if valid else "must be a date and time with a timezone, e.g. 2026-07-28T09:30:00Z")


NUMBER_CASES: list[tuple[str, dict[str, object], object, str | None]] = [
    ("int", {"type": "number"}, 3, None),
    ("float", {"type": "number"}, 2.5, None),
    ("negative", {"type": "number"}, -1e300, None),
    ("bool-is-not-a-number", {"type": "number"}, True, "must be a number"),
    ("string-is-not-a-number", {"type": "number"}, "3", "must be a number"),
    ("nan", {"type": "number"}, float("nan"), "must be a finite number"),
    ("infinity", {"type": "number"}, float("-inf"), "must be a finite number"),
    ("at-minimum", {"type": "number", "minimum": 1}, 1, None),
    ("below-minimum", {"type": "number", "minimum": 1}, 0.999, "must be at least 1"),
    ("at-maximum", {"type": "number", "maximum": 2.5}, 2.5, None),
    ("above-maximum", {"type": "number", "maximum": 2.5}, 3, "must be at most 2.5"),
    ("whole-float-bound-shown-plainly", {"type": "number", "maximum": 10.0}, 11, "must be at most 10"),
    ("huge-int-above-float-bound", {"type": "number", "maximum": 1e300}, 10**400, "must be at most 1e+300"),
    ("integer", {"type": "integer"}, 7, None),
    ("integer-fraction", {"type": "integer"}, 7.5, "must be a whole number"),
    ("integer-bool", {"type": "integer"}, False, "must be a whole number"),
    ("integer-string", {"type": "integer"}, "7", "must be a whole number"),
    ("integer-nan", {"type": "integer"}, float("nan"), "must be a finite number"),
    ("integer-below-minimum", {"type": "integer", "minimum": 0}, -1, "must be at least 0"),
    ("integer-above-maximum", {"type": "integer", "maximum": 5}, 6.0, "must be at most 5"),
]


@pytest.mark.parametrize(
    ("prop", "value", "error"),
    [pytest.param(prop, value, error, id=case) for case, prop, value, error in NUMBER_CASES],
)
def test_number_rules(prop: dict[str, object], value: object, error: str | None) -> None:
    assert error_for(prop, value) == error


def test_number_keeps_the_type_it_was_given() -> None:
    assert check({"type": "number"}, 2)[0] == {"f": 2}
    assert type(check({"type": "number"}, 2.0)[0]["f"]) is float


def test_integer_given_as_a_whole_float_is_stored_as_an_int() -> None:
    clean, errors = check({"type": "integer"}, 4.0)
    assert (clean, errors) == ({"f": 4}, {})
    assert type(clean["f"]) is int


@pytest.mark.parametrize(
    ("value", "error"), [(True, None), (False, None), ("true", "x"), (1, "x"), (0, "x"), (None, "x")]
)
def test_boolean_accepts_only_true_or_false(value: object, error: str | None) -> None:
    expected = None if error is None else "must be true or false"
    assert error_for({"type": "boolean"}, value) == expected


SINGLE: dict[str, object] = {
    "type": "string",
    "enum": ["staging", "production"],
    "enumNames": ["Staging", "Production"],
}
SINGLE_FIELDS = field(SINGLE)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("staging", None),
        ("production", None),
        ("Production", "must be one of: staging, production"),
        ("", "must be one of: staging, production"),
        (["staging"], "must be one of: staging, production"),
        (1, "must be one of: staging, production"),
    ],
)
def test_single_select_accepts_only_option_values(value: object, error: str | None) -> None:
    assert error_for(SINGLE, value) == error


def test_single_select_with_many_options_does_not_list_them_all() -> None:
    prop: dict[str, object] = {"type": "string", "enum": [str(i) for i in range(11)]}
    assert error_for(prop, "x") == "must be one of the 11 listed options"


MULTI: dict[str, object] = {
    "type": "array",
    "minItems": 1,
    "maxItems": 2,
    "items": {"anyOf": [{"const": c, "title": c.upper()} for c in ("a", "b", "c")]},
}


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (["a"], None),
        (["c", "a"], None),
        ([], "must have at least 1 selection"),
        (["a", "b", "c"], "must have at most 2 selections"),
        (["a", "a"], "must not select the same option twice"),
        (["d"], "each selection must be one of: a, b, c"),
        (["A"], "each selection must be one of: a, b, c"),
        ("a", "must be a list of option values"),
        ([1], "must be a list of option values"),
        ({"a": True}, "must be a list of option values"),
        (None, "must be a list of option values"),
    ],
)
def test_multi_select_rules(value: object, error: str | None) -> None:
    assert error_for(MULTI, value) == error


def test_multi_select_min_items_message_pluralises() -> None:
    prop = {**MULTI, "minItems": 2}
    assert error_for(prop, ["a"]) == "must have at least 2 selections"


def test_multi_select_clean_value_is_a_copy() -> None:
    answer = ["a"]
    clean, _ = check(MULTI, answer)
    answer.append("b")
    assert clean == {"f": ["a"]}


# parse_form_data


def post(fields: Sequence[FieldSpec], **values: list[str]) -> tuple[dict[str, object], dict[str, str]]:
    return parse_form_data(fields, values)


def test_deploy_form_with_ticked_checkbox_is_accepted() -> None:
    assert post(DEPLOY, environment=["production"], confirm=["on"]) == (
        {"environment": "production", "confirm": True},
        {},
    )


def test_deploy_form_with_unticked_checkbox_answers_false() -> None:
    assert post(DEPLOY, environment=["staging"]) == ({"environment": "staging", "confirm": False}, {})


def test_deploy_form_without_a_choice_is_missing_the_required_select() -> None:
    assert post(DEPLOY, environment=[""], confirm=["true"]) == (
        {"confirm": True},
        {"environment": "is required"},
    )


@pytest.mark.parametrize(
    ("values", "answer"),
    [
        ([], False),
        ([""], False),
        (["on"], True),
        (["true"], True),
        (["false"], False),
        (["false", "true"], True),
    ],
)
def test_checkbox_values(values: list[str], answer: bool) -> None:
    fields = field({"type": "boolean"})
    assert parse_form_data(fields, {"f": values}) == ({"f": answer}, {})


@pytest.mark.parametrize("values", [["yes"], ["1"], ["TRUE"], ["on", "maybe"]])
def test_checkbox_with_another_value_is_an_error(values: list[str]) -> None:
    assert parse_form_data(field({"type": "boolean"}), {"f": values})[1] == {"f": "must be true or false"}


def test_empty_optional_text_field_is_absent() -> None:
    fields = field({"type": "string", "minLength": 3, "format": "email"}, required=False)
    assert parse_form_data(fields, {"f": [""]}) == ({}, {})


def test_empty_required_text_field_is_missing() -> None:
    assert parse_form_data(field({"type": "string"}), {"f": [""]}) == ({}, {"f": "is required"})


def test_text_is_kept_exactly_as_typed() -> None:
    assert parse_form_data(field({"type": "string"}), {"f": ["  two words \n"]}) == (
        {"f": "  two words \n"},
        {},
    )


def test_text_field_rules_apply_after_conversion() -> None:
    fields = field({"type": "string", "format": "email"})
    assert parse_form_data(fields, {"f": ["nope"]})[1] == {"f": "must be a valid email address"}


def test_a_single_value_field_posted_twice_is_an_error() -> None:
    assert parse_form_data(SINGLE_FIELDS, {"f": ["staging", "production"]})[1] == {
        "f": "must have a single value"
    }


def test_select_value_is_checked_against_options() -> None:
    assert parse_form_data(SINGLE_FIELDS, {"f": ["production"]}) == ({"f": "production"}, {})
    assert parse_form_data(SINGLE_FIELDS, {"f": ["prod"]})[1] == {"f": "must be one of: staging, production"}


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", 42),
        (" 42 ", 42),
        ("-3", -3),
        ("+3", 3),
        ("4.5", 4.5),
        ("1e3", 1000.0),
        (".5", 0.5),
        ("5.", 5.0),
    ],
)
def test_number_text_is_parsed(text: str, number: float) -> None:
    clean, errors = parse_form_data(field({"type": "number"}), {"f": [text]})
    assert (clean, errors) == ({"f": number}, {})
    assert type(clean["f"]) is type(number)


@pytest.mark.parametrize(
    "text", ["abc", "nan", "inf", "Infinity", "1e999", "1_000", "0x10", "1,5", "١٢", "--1", "1e", "9" * 5000]
)
def test_number_text_that_is_not_a_plain_finite_number_is_an_error(text: str) -> None:
    assert parse_form_data(field({"type": "number"}), {"f": [text]})[1] == {"f": "must be a number"}


@pytest.mark.parametrize(("text", "number"), [("7", 7), ("7.0", 7), ("-0", 0), ("1e2", 100)])
def test_integer_text_is_parsed_to_an_int(text: str, number: int) -> None:
    clean, errors = parse_form_data(field({"type": "integer"}), {"f": [text]})
    assert (clean, errors) == ({"f": number}, {})
    assert type(clean["f"]) is int


@pytest.mark.parametrize("text", ["7.5", "seven", "1e-1"])
def test_integer_text_that_is_not_whole_is_an_error(text: str) -> None:
    assert parse_form_data(field({"type": "integer"}), {"f": [text]})[1] == {"f": "must be a whole number"}


def test_number_bounds_apply_after_parsing() -> None:
    fields = field({"type": "integer", "minimum": 1, "maximum": 10})
    assert parse_form_data(fields, {"f": ["11"]})[1] == {"f": "must be at most 10"}


@pytest.mark.parametrize("values", [[""], ["   "], []])
def test_blank_optional_number_is_absent(values: list[str]) -> None:
    assert parse_form_data(field({"type": "number"}, required=False), {"f": values}) == ({}, {})


def test_blank_required_number_is_missing() -> None:
    assert parse_form_data(field({"type": "number"}), {"f": [" "]}) == ({}, {"f": "is required"})


def test_multi_select_takes_the_checked_values() -> None:
    assert parse_form_data(field(MULTI), {"f": ["c", "a"]}) == ({"f": ["c", "a"]}, {})


def test_multi_select_rules_apply_to_checked_values() -> None:
    assert parse_form_data(field(MULTI), {"f": ["a", "b", "c"]})[1] == {"f": "must have at most 2 selections"}
    assert parse_form_data(field(MULTI), {"f": ["a", "zzz"]})[1] == {
        "f": "each selection must be one of: a, b, c"
    }


def test_unticked_optional_multi_select_is_absent() -> None:
    assert parse_form_data(field(MULTI, required=False), {}) == ({}, {})


def test_unticked_required_multi_select_answers_an_empty_selection() -> None:
    unbounded = {**MULTI, "minItems": 0}
    assert parse_form_data(field(unbounded), {"f": [""]}) == ({"f": []}, {})
    assert parse_form_data(field(MULTI), {}) == ({}, {"f": "must have at least 1 selection"})


def test_unknown_form_fields_are_a_whole_form_error() -> None:
    _, errors = parse_form_data(DEPLOY, {"environment": ["staging"], "csrf": ["t"], "<x>": [""]})
    assert errors == {"": "unknown fields: csrf, <x>"}


def test_a_bare_string_value_counts_as_one_value() -> None:
    assert parse_form_data(SINGLE_FIELDS, {"f": "staging"}) == ({"f": "staging"}, {})


def test_form_and_json_answers_agree_on_the_same_answer() -> None:
    fields = parse_schema(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "maxLength": 5},
                "count": {"type": "integer", "minimum": 1},
                "ok": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
            },
            "required": ["name", "ok"],
        }
    )
    form = {"name": ["abc"], "count": ["2"], "ok": ["on"], "tags": ["y"]}
    assert parse_form_data(fields, form) == validate_content(
        fields, {"name": "abc", "count": 2, "ok": True, "tags": ["y"]}
    )


# defaults


def test_defaults_lists_only_fields_with_defaults() -> None:
    assert defaults(DEPLOY) == {"environment": "staging"}


def test_defaults_are_in_answer_shape() -> None:
    fields = parse_schema(
        {
            "type": "object",
            "properties": {
                "s": {"type": "string", "default": "x"},
                "n": {"type": "integer", "default": 2.0},
                "b": {"type": "boolean", "default": False},
                "m": {"type": "array", "items": {"enum": ["p", "q"]}, "default": ["q", "p"]},
                "none": {"type": "string"},
            },
        }
    )
    result = defaults(fields)
    assert result == {"s": "x", "n": 2, "b": False, "m": ["q", "p"]}
    assert validate_content(fields, result) == (result, {})


def test_defaults_result_is_a_fresh_copy() -> None:
    fields = field({"type": "array", "items": {"enum": ["p"]}, "default": ["p"]})
    first = defaults(fields)
    value = first["f"]
    assert isinstance(value, list)
    value.append("mutated")
    assert defaults(fields) == {"f": ["p"]}


def test_accepting_deploy_with_defaults_alone_still_needs_the_checkbox() -> None:
    assert validate_content(DEPLOY, defaults(DEPLOY))[1] == {"confirm": "is required"}


def test_field_spec_built_by_hand_validates_too() -> None:
    spec = FieldSpec(name="env", kind="single_select", options=(Option("a", "A"),), required=True)
    assert validate_content([spec], {"env": "a"}) == ({"env": "a"}, {})
