"""A call's arguments, and a gate's changed ones, checked against the tool's own inputSchema: every error
named by its path, no change at all without a schema (or with a broken one), and no `$ref` ever fetched."""

from __future__ import annotations

from console.forms.arguments import argument_errors, call_argument_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "environment": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1},
        "target": {"type": "object", "properties": {"region": {"type": "string"}}},
    },
    "required": ["environment"],
    "additionalProperties": False,
}


def test_arguments_the_schema_takes_have_no_errors() -> None:
    assert (
        argument_errors(SCHEMA, {"environment": "staging", "replicas": 2, "target": {"region": "eu"}}) == {}
    )


def test_each_refusal_is_named_by_its_path() -> None:
    errors = argument_errors(SCHEMA, {"environment": "prod", "replicas": 0, "target": {"region": 5}, "x": 1})
    assert set(errors) == {
        "arguments.environment",
        "arguments.replicas",
        "arguments.target.region",
        "arguments",
    }
    assert "'x' was unexpected" in errors["arguments"]
    assert argument_errors(SCHEMA, {}) == {"arguments": "'environment' is a required property"}


def test_without_a_usable_schema_no_change_is_taken() -> None:
    assert "is not known" in argument_errors(None, {"environment": "staging"})["arguments"]
    assert "not valid JSON Schema" in argument_errors({"type": 5}, {})["arguments"]
    assert argument_errors(SCHEMA, ["environment"]) == {"arguments": "must be an object"}


def test_a_reference_outside_the_schema_is_refused_without_being_fetched() -> None:
    remote = {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}}}
    assert "refers to what it does not contain" in argument_errors(remote, {"a": 1})["arguments"]
    local = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/text"}},
        "$defs": {"text": {"type": "string"}},
    }
    assert argument_errors(local, {"a": 1}) == {"arguments.a": "1 is not of type 'string'"}


def test_a_calls_arguments_are_checked_against_the_schema_with_the_field_named() -> None:
    assert call_argument_errors(SCHEMA, {"environment": "staging"}) == {}
    assert call_argument_errors(SCHEMA, {"environment": "staging", "replicas": "2"}) == {
        "params.arguments.replicas": "'2' is not of type 'integer'"
    }
    assert call_argument_errors(SCHEMA, {}) == {"params.arguments": "'environment' is a required property"}
    assert "is not of type 'object'" in call_argument_errors(SCHEMA, ["environment"])["params.arguments"]


def test_a_null_argument_counts_as_not_given() -> None:
    assert call_argument_errors(SCHEMA, {"environment": "staging", "replicas": None}) == {}
    assert call_argument_errors(SCHEMA, {"environment": None}) == {
        "params.arguments": "'environment' is a required property"
    }


def test_a_schema_that_is_no_json_schema_leaves_the_judgement_to_the_server() -> None:
    assert call_argument_errors({"type": 5}, {"anything": 1}) == {}
