import re

import pytest

from console.forms import FieldSpec, Option, SchemaError, parse_schema
from console.forms.schema import MAX_OPTIONS, MAX_PROPERTIES
from tests.forms.schemas import DEPLOY_SCHEMA


def form(properties: dict[str, object], required: list[str] | None = None) -> dict[str, object]:
    schema: dict[str, object] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


def only_field(prop: dict[str, object]) -> FieldSpec:
    (spec,) = parse_schema(form({"f": prop}))
    return spec


def test_deploy_schema_parses_to_a_titled_select_and_a_required_checkbox() -> None:
    assert parse_schema(DEPLOY_SCHEMA) == (
        FieldSpec(
            name="environment",
            kind="single_select",
            title="Environment",
            required=True,
            default="staging",
            options=(Option("staging", "Staging"), Option("production", "Production")),
        ),
        FieldSpec(name="confirm", kind="boolean", title="I have reviewed the changes", required=True),
    )


def test_string_field_keeps_every_allowed_keyword() -> None:
    spec = only_field(
        {
            "type": "string",
            "title": "Email",
            "description": "Where to send it",
            "minLength": 3,
            "maxLength": 64,
            "format": "email",
            "default": "ops@example.com",
        }
    )
    assert spec == FieldSpec(
        name="f",
        kind="string",
        title="Email",
        description="Where to send it",
        default="ops@example.com",
        format="email",
        min_length=3,
        max_length=64,
    )


@pytest.mark.parametrize("format_", ["email", "uri", "date", "date-time"])
def test_every_allowed_string_format_is_accepted(format_: str) -> None:
    assert only_field({"type": "string", "format": format_}).format == format_


def test_bare_string_field_has_no_constraints() -> None:
    assert only_field({"type": "string"}) == FieldSpec(name="f", kind="string")


def test_number_bounds_given_as_ints_stay_ints() -> None:
    spec = only_field({"type": "number", "minimum": 1, "maximum": 10, "default": 2.5})
    assert (spec.kind, spec.minimum, spec.maximum, spec.default) == ("number", 1, 10, 2.5)
    assert [type(spec.minimum), type(spec.maximum)] == [int, int]


def test_number_bounds_given_as_floats_stay_floats() -> None:
    spec = only_field({"type": "number", "minimum": 0.5, "maximum": 1.5})
    assert (spec.minimum, spec.maximum) == (0.5, 1.5)


def test_integer_field_is_its_own_kind() -> None:
    spec = only_field({"type": "integer", "minimum": 0, "maximum": 5, "default": 3})
    assert (spec.kind, spec.minimum, spec.maximum, spec.default) == ("integer", 0, 5, 3)


def test_integer_default_written_as_a_whole_float_is_stored_as_an_int() -> None:
    default = only_field({"type": "integer", "default": 3.0}).default
    assert default == 3
    assert type(default) is int


def test_boolean_field_keeps_its_default() -> None:
    assert only_field({"type": "boolean", "default": False}) == FieldSpec(
        name="f", kind="boolean", default=False
    )


def test_untitled_enum_uses_values_as_labels() -> None:
    spec = only_field({"type": "string", "enum": ["red", "green"], "default": "green"})
    assert spec.kind == "single_select"
    assert spec.options == (Option("red", "red"), Option("green", "green"))
    assert spec.default == "green"


def test_legacy_enum_names_give_the_labels() -> None:
    spec = only_field({"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]})
    assert spec.options == (Option("r", "Red"), Option("g", "Green"))


def test_titled_one_of_gives_values_and_labels() -> None:
    spec = only_field({"type": "string", "oneOf": [{"const": "a", "title": "Alpha"}]})
    assert (spec.kind, spec.options) == ("single_select", (Option("a", "Alpha"),))


def test_untitled_multi_select_parses_options_bounds_and_default() -> None:
    spec = only_field(
        {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "default": ["x"],
        }
    )
    assert spec == FieldSpec(
        name="f",
        kind="multi_select",
        options=(Option("x", "x"), Option("y", "y"), Option("z", "z")),
        min_items=1,
        max_items=2,
        default=("x",),
    )


@pytest.mark.parametrize(
    "items",
    [
        {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
        {"type": "string", "anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
    ],
)
def test_titled_multi_select_takes_labels_from_any_of(items: dict[str, object]) -> None:
    spec = only_field({"type": "array", "items": items, "default": ["y", "x"]})
    assert spec.kind == "multi_select"
    assert spec.options == (Option("x", "Ex"), Option("y", "Why"))
    assert spec.default == ("y", "x")


def test_multi_select_default_is_stored_immutably() -> None:
    spec = only_field({"type": "array", "items": {"type": "string", "enum": ["x"]}, "default": ["x"]})
    assert isinstance(spec.default, tuple)
    assert hash(spec)


def test_property_order_is_kept() -> None:
    names = [f"p{i}" for i in (5, 1, 9, 0)]
    specs = parse_schema(form({name: {"type": "string"} for name in names}))
    assert [spec.name for spec in specs] == names


def test_required_marks_only_the_named_fields() -> None:
    specs = parse_schema(form({"a": {"type": "string"}, "b": {"type": "string"}}, required=["b"]))
    assert [(spec.name, spec.required) for spec in specs] == [("a", False), ("b", True)]


def test_top_level_schema_title_and_description_are_accepted_and_ignored() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "title": "Deploy",
        "description": "Pick a target",
        "properties": {"a": {"type": "boolean"}},
    }
    assert parse_schema(schema) == (FieldSpec(name="a", kind="boolean"),)


def test_schema_without_properties_entries_gives_no_fields() -> None:
    assert parse_schema(form({}, required=[])) == ()


def test_limits_themselves_are_allowed() -> None:
    many_props = form({f"p{i}": {"type": "boolean"} for i in range(MAX_PROPERTIES)})
    many_options = form({"f": {"type": "string", "enum": [str(i) for i in range(MAX_OPTIONS)]}})
    assert len(parse_schema(many_props)) == MAX_PROPERTIES
    assert len(parse_schema(many_options)[0].options) == MAX_OPTIONS


@pytest.mark.parametrize(
    "name",
    [
        "a\"b'c",
        "<script>alert(1)</script>",
        "名前 ✓",
        "with space",
        "line\nbreak",
        "__proto__",
        "$ref",
        "properties",
    ],
)
def test_hostile_property_names_are_kept_verbatim(name: str) -> None:
    (spec,) = parse_schema(form({name: {"type": "string"}}, required=[name]))
    assert spec.name == name
    assert spec.required


def test_hostile_property_name_is_quoted_safely_in_errors() -> None:
    name = "<script>'x\"\n"
    with pytest.raises(SchemaError) as caught:
        parse_schema(form({name: {"type": "object"}}))
    assert str(caught.value) == f"property {name!r}: nested objects are not allowed in elicitation forms"


def test_schema_error_is_a_value_error() -> None:
    assert issubclass(SchemaError, ValueError)


TOP_LEVEL_REJECTIONS: list[tuple[str, object, str]] = [
    ("list", [], "requestedSchema must be a JSON object"),
    ("none", None, "requestedSchema must be a JSON object"),
    ("json-text", '{"type": "object"}', "requestedSchema must be a JSON object"),
    ("missing-type", {"properties": {}}, 'requestedSchema must have "type": "object"'),
    ("array-type", {"type": "array", "properties": {}}, 'requestedSchema must have "type": "object"'),
    ("type-list", {"type": ["object"], "properties": {}}, 'requestedSchema must have "type": "object"'),
    ("missing-properties", {"type": "object"}, 'requestedSchema must have a "properties" object'),
    (
        "list-properties",
        {"type": "object", "properties": []},
        'requestedSchema must have a "properties" object',
    ),
    (
        "unknown-top-level-keyword",
        {"type": "object", "properties": {}, "additionalProperties": False},
        "requestedSchema: keyword 'additionalProperties' is not allowed on the top level",
    ),
    (
        "non-string-$schema",
        {"type": "object", "properties": {}, "$schema": 7},
        "requestedSchema: $schema must be a string",
    ),
    (
        "non-string-title",
        {"type": "object", "properties": {}, "title": None},
        "requestedSchema: title must be a string",
    ),
    (
        "non-string-description",
        {"type": "object", "properties": {}, "description": ["x"]},
        "requestedSchema: description must be a string",
    ),
    (
        "required-not-a-list",
        form({"a": {"type": "string"}}, required="a"),  # type: ignore[arg-type]
        "requestedSchema: required must be a list of property names",
    ),
    (
        "required-with-non-string",
        form({"a": {"type": "string"}}, required=[1]),  # type: ignore[list-item]
        "requestedSchema: required must be a list of property names",
    ),
    (
        "required-unknown-name",
        form({"a": {"type": "string"}}, required=["a", "b", "c"]),
        "requestedSchema: required names unknown properties: 'b', 'c'",
    ),
    (
        "too-many-properties",
        form({f"p{i}": {"type": "boolean"} for i in range(MAX_PROPERTIES + 1)}),
        f"requestedSchema has {MAX_PROPERTIES + 1} properties; at most {MAX_PROPERTIES} are allowed",
    ),
    ("non-string-property-name", form({1: {"type": "string"}}), "property names must be strings"),  # type: ignore[dict-item]
    ("empty-property-name", form({"": {"type": "string"}}), "property names must not be empty"),
]


@pytest.mark.parametrize(
    ("schema", "message"),
    [pytest.param(schema, message, id=case) for case, schema, message in TOP_LEVEL_REJECTIONS],
)
def test_schema_outside_the_top_level_subset_is_rejected(schema: object, message: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(message)):
        parse_schema(schema)


def options(count: int) -> list[str]:
    return [f"o{i}" for i in range(count)]


def titled(count: int) -> list[dict[str, str]]:
    return [{"const": f"o{i}", "title": f"O{i}"} for i in range(count)]


PROPERTY_REJECTIONS: list[tuple[str, object, str]] = [
    # shape
    ("not-a-dict", "string", "must be a JSON object"),
    ("missing-type", {"title": "x"}, "must have a type"),
    ("type-list", {"type": ["string", "null"]}, "type must be a single string"),
    ("unknown-type", {"type": "null"}, "unknown type 'null'; allowed types are"),
    (
        "nested-object",
        {"type": "object", "properties": {"x": {"type": "string"}}},
        "nested objects are not allowed in elicitation forms",
    ),
    (
        "array-of-objects",
        {"type": "array", "items": {"type": "object", "properties": {}}},
        "arrays of objects are not allowed in elicitation forms",
    ),
    (
        "array-of-untyped-objects",
        {"type": "array", "items": {"properties": {"x": {"type": "string"}}}},
        "arrays of objects are not allowed in elicitation forms",
    ),
    (
        "nested-array",
        {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
        "nested arrays are not allowed in elicitation forms",
    ),
    # unknown keywords
    (
        "pattern",
        {"type": "string", "pattern": "^a"},
        "keyword 'pattern' is not allowed on a string field in elicitation forms",
    ),
    ("ref", {"type": "string", "$ref": "#/x"}, "keyword '$ref' is not allowed on a string field"),
    ("all-of", {"type": "number", "allOf": []}, "keyword 'allOf' is not allowed on a number field"),
    (
        "several-keywords",
        {"type": "integer", "multipleOf": 2, "exclusiveMinimum": 0},
        "keywords 'multipleOf', 'exclusiveMinimum' are not allowed on a integer field",
    ),
    (
        "boolean-extra",
        {"type": "boolean", "const": True},
        "keyword 'const' is not allowed on a boolean field",
    ),
    (
        "length-on-enum",
        {"type": "string", "enum": ["a"], "minLength": 1},
        "keyword 'minLength' is not allowed on a single-select field",
    ),
    (
        "format-on-one-of",
        {"type": "string", "oneOf": titled(1), "format": "email"},
        "keyword 'format' is not allowed on a single-select field",
    ),
    (
        "enum-names-without-enum",
        {"type": "string", "enumNames": ["A"]},
        "keyword 'enumNames' is not allowed on a string field",
    ),
    (
        "unique-items",
        {"type": "array", "items": {"enum": ["a"]}, "uniqueItems": True},
        "keyword 'uniqueItems' is not allowed on a multi-select field",
    ),
    (
        "enum-and-one-of",
        {"type": "string", "enum": ["a"], "oneOf": titled(1)},
        "use either enum or oneOf, not both",
    ),
    # keyword types
    ("title-not-string", {"type": "string", "title": 5}, "title must be a string"),
    ("description-not-string", {"type": "string", "description": None}, "description must be a string"),
    ("min-length-negative", {"type": "string", "minLength": -1}, "minLength must be a non-negative integer"),
    ("min-length-float", {"type": "string", "minLength": 1.0}, "minLength must be a non-negative integer"),
    ("min-length-bool", {"type": "string", "minLength": True}, "minLength must be a non-negative integer"),
    ("max-length-string", {"type": "string", "maxLength": "5"}, "maxLength must be a non-negative integer"),
    ("min-items-negative", {"type": "array", "items": {"enum": ["a"]}, "minItems": -2}, "minItems must be"),
    ("max-items-null", {"type": "array", "items": {"enum": ["a"]}, "maxItems": None}, "maxItems must be"),
    ("minimum-string", {"type": "number", "minimum": "1"}, "minimum must be a number"),
    ("minimum-bool", {"type": "number", "minimum": False}, "minimum must be a number"),
    ("maximum-bool", {"type": "integer", "maximum": True}, "maximum must be a number"),
    ("maximum-nan", {"type": "number", "maximum": float("nan")}, "maximum must be a number"),
    ("maximum-infinity", {"type": "number", "maximum": float("inf")}, "maximum must be a number"),
    ("unknown-format", {"type": "string", "format": "ipv4"}, "unknown format 'ipv4'; allowed formats are"),
    ("format-not-string", {"type": "string", "format": 1}, "unknown format 1"),
    ("format-null", {"type": "string", "format": None}, "unknown format None"),
    # ordering
    (
        "length-order",
        {"type": "string", "minLength": 5, "maxLength": 3},
        "minLength (5) is greater than maxLength (3)",
    ),
    (
        "range-order",
        {"type": "number", "minimum": 2.5, "maximum": 1},
        "minimum (2.5) is greater than maximum (1)",
    ),
    (
        "items-order",
        {"type": "array", "items": {"enum": ["a"]}, "minItems": 2, "maxItems": 1},
        "minItems (2) is greater than maxItems (1)",
    ),
    # options
    ("empty-enum", {"type": "string", "enum": []}, "enum must be a non-empty list"),
    ("enum-not-list", {"type": "string", "enum": "a"}, "enum must be a non-empty list"),
    ("enum-non-string", {"type": "string", "enum": ["a", 1]}, "enum values must be strings"),
    ("duplicate-enum", {"type": "string", "enum": ["a", "b", "a", "b", "a"]}, "enum repeats 'a', 'b'"),
    (
        "enum-names-length",
        {"type": "string", "enum": ["a", "b"], "enumNames": ["A"]},
        "enumNames has 1 entries",
    ),
    ("enum-names-not-list", {"type": "string", "enum": ["a"], "enumNames": "A"}, "enumNames must be a list"),
    (
        "enum-names-non-string",
        {"type": "string", "enum": ["a"], "enumNames": [1]},
        "enumNames must be a list",
    ),
    ("empty-one-of", {"type": "string", "oneOf": []}, "oneOf must be a non-empty list"),
    ("one-of-not-list", {"type": "string", "oneOf": {"const": "a"}}, "oneOf must be a non-empty list"),
    (
        "one-of-no-title",
        {"type": "string", "oneOf": [{"const": "a"}]},
        'oneOf entries must be {"const": string',
    ),
    (
        "one-of-extra-key",
        {"type": "string", "oneOf": [{"const": "a", "title": "A", "description": "d"}]},
        "oneOf entries must be",
    ),
    (
        "one-of-const-number",
        {"type": "string", "oneOf": [{"const": 1, "title": "A"}]},
        "oneOf entries must be",
    ),
    (
        "one-of-title-null",
        {"type": "string", "oneOf": [{"const": "a", "title": None}]},
        "oneOf entries must be",
    ),
    ("one-of-entry-string", {"type": "string", "oneOf": ["a"]}, "oneOf entries must be"),
    ("duplicate-one-of", {"type": "string", "oneOf": titled(2) + titled(1)}, "oneOf repeats 'o0'"),
    ("items-missing", {"type": "array"}, "items must list the options with either enum or anyOf"),
    (
        "items-not-dict",
        {"type": "array", "items": ["a"]},
        "items must list the options with either enum or anyOf",
    ),
    ("items-plain-string", {"type": "array", "items": {"type": "string"}}, "items must list the options"),
    (
        "items-enum-and-any-of",
        {"type": "array", "items": {"enum": ["a"], "anyOf": titled(1)}},
        "items must list the options with either enum or anyOf",
    ),
    (
        "items-number",
        {"type": "array", "items": {"type": "number", "enum": ["a"]}},
        'items type must be "string"',
    ),
    (
        "items-unknown-keyword",
        {"type": "array", "items": {"type": "string", "enum": ["a"], "enumNames": ["A"]}},
        "items: keyword 'enumNames' is not allowed on multi-select items",
    ),
    ("empty-items-enum", {"type": "array", "items": {"enum": []}}, "items enum must be a non-empty list"),
    ("duplicate-items-enum", {"type": "array", "items": {"enum": ["a", "a"]}}, "items enum repeats 'a'"),
    ("empty-any-of", {"type": "array", "items": {"anyOf": []}}, "items anyOf must be a non-empty list"),
    (
        "bad-any-of-entry",
        {"type": "array", "items": {"anyOf": [{"const": "a"}]}},
        "items anyOf entries must be",
    ),
    ("duplicate-any-of", {"type": "array", "items": {"anyOf": titled(1) * 2}}, "items anyOf repeats 'o0'"),
    # caps
    (
        "too-many-enum-options",
        {"type": "string", "enum": options(MAX_OPTIONS + 1)},
        f"enum has {MAX_OPTIONS + 1} options; at most {MAX_OPTIONS} are allowed",
    ),
    (
        "too-many-one-of-options",
        {"type": "string", "oneOf": titled(MAX_OPTIONS + 1)},
        "oneOf has 1001 options",
    ),
    (
        "too-many-items-options",
        {"type": "array", "items": {"enum": options(MAX_OPTIONS + 1)}},
        "items enum has 1001 options",
    ),
    (
        "too-many-any-of-options",
        {"type": "array", "items": {"anyOf": titled(MAX_OPTIONS + 1)}},
        "has 1001 options",
    ),
    # defaults
    ("string-default-number", {"type": "string", "default": 5}, "default must be a string"),
    (
        "string-default-too-long",
        {"type": "string", "maxLength": 2, "default": "abc"},
        "default must be at most 2",
    ),
    (
        "string-default-bad-email",
        {"type": "string", "format": "email", "default": "nope"},
        "default must be a valid",
    ),
    (
        "string-default-bad-date",
        {"type": "string", "format": "date", "default": "2026-02-30"},
        "default must be",
    ),
    ("default-null", {"type": "string", "default": None}, "default must be a string"),
    ("number-default-bool", {"type": "number", "default": True}, "default must be a number"),
    ("number-default-string", {"type": "number", "default": "1"}, "default must be a number"),
    ("number-default-below", {"type": "number", "minimum": 1, "default": 0.5}, "default must be at least 1"),
    ("integer-default-fraction", {"type": "integer", "default": 1.5}, "default must be a whole number"),
    ("integer-default-above", {"type": "integer", "maximum": 3, "default": 4}, "default must be at most 3"),
    ("boolean-default-string", {"type": "boolean", "default": "true"}, "default must be true or false"),
    ("boolean-default-int", {"type": "boolean", "default": 1}, "default must be true or false"),
    (
        "enum-default-unknown",
        {"type": "string", "enum": ["a", "b"], "default": "c"},
        "default must be one of: a, b",
    ),
    (
        "one-of-default-label",
        {"type": "string", "oneOf": titled(1), "default": "O0"},
        "default must be one of: o0",
    ),
    (
        "multi-default-string",
        {"type": "array", "items": {"enum": ["a"]}, "default": "a"},
        "default must be a list",
    ),
    (
        "multi-default-unknown",
        {"type": "array", "items": {"enum": ["a"]}, "default": ["b"]},
        "default each selection must be one of: a",
    ),
    (
        "multi-default-duplicate",
        {"type": "array", "items": {"enum": ["a"]}, "default": ["a", "a"]},
        "default must not select the same option twice",
    ),
    (
        "multi-default-too-few",
        {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 2, "default": ["a"]},
        "default must have at least 2 selections",
    ),
]


@pytest.mark.parametrize(
    ("prop", "message"),
    [pytest.param(prop, message, id=case) for case, prop, message in PROPERTY_REJECTIONS],
)
def test_property_outside_the_subset_is_rejected_naming_the_property(prop: object, message: str) -> None:
    with pytest.raises(SchemaError, match="^property 'field': .*" + re.escape(message)):
        parse_schema(form({"field": prop}))


def test_error_names_the_offending_property_among_valid_ones() -> None:
    schema = form(
        {"ok": {"type": "string"}, "bad": {"type": "string", "pattern": "x"}, "later": {"type": "boolean"}}
    )
    with pytest.raises(SchemaError, match=r"^property 'bad': keyword 'pattern'"):
        parse_schema(schema)
