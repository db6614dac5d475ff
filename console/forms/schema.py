"""Parse an MCP elicitation `requestedSchema` (form mode) into field specs, rejecting anything else."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Iterable, Mapping

from console.forms._values import check_value, format_number
from console.forms.fields import FieldSpec, Option

__all__ = ["MAX_OPTIONS", "MAX_PROPERTIES", "SchemaError", "parse_schema"]


MAX_PROPERTIES = 200
MAX_OPTIONS = 1000

_FORMATS = ("email", "uri", "date", "date-time")
_TOP_LEVEL_KEYWORDS = frozenset({"type", "properties", "required", "$schema", "title", "description"})
_COMMON_KEYWORDS = frozenset({"type", "title", "description", "default"})
_STRING_KEYWORDS = _COMMON_KEYWORDS | {"minLength", "maxLength", "format"}
_ENUM_KEYWORDS = _COMMON_KEYWORDS | {"enum", "enumNames"}
_ONE_OF_KEYWORDS = _COMMON_KEYWORDS | {"oneOf"}
_NUMBER_KEYWORDS = _COMMON_KEYWORDS | {"minimum", "maximum"}
_ARRAY_KEYWORDS = _COMMON_KEYWORDS | {"minItems", "maxItems", "items"}


class SchemaError(ValueError):
    """The schema uses something outside the elicitation form subset; the message says what and where."""


def parse_schema(schema: object) -> tuple[FieldSpec, ...]:
    """Turn a form-mode `requestedSchema` into field specs in property order, or raise SchemaError."""
    if not isinstance(schema, dict):
        raise SchemaError("requestedSchema must be a JSON object")
    _reject_unknown(schema, _TOP_LEVEL_KEYWORDS, "requestedSchema", "the top level")
    if schema.get("type") != "object":
        raise SchemaError('requestedSchema must have "type": "object"')
    for keyword in ("$schema", "title", "description"):
        if keyword in schema and not isinstance(schema[keyword], str):
            raise SchemaError(f"requestedSchema: {keyword} must be a string")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaError('requestedSchema must have a "properties" object')
    if len(properties) > MAX_PROPERTIES:
        raise SchemaError(
            f"requestedSchema has {len(properties)} properties; at most {MAX_PROPERTIES} are allowed"
        )
    required = _parse_required(schema.get("required", []), properties)
    return tuple(_parse_property(name, prop, name in required) for name, prop in properties.items())


def _parse_required(required: object, properties: Mapping[object, object]) -> frozenset[str]:
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise SchemaError("requestedSchema: required must be a list of property names")
    unknown = [name for name in required if name not in properties]
    if unknown:
        raise SchemaError("requestedSchema: required names unknown properties: " + _quoted(unknown))
    return frozenset(required)


def _parse_property(name: object, prop: object, required: bool) -> FieldSpec:
    if not isinstance(name, str):
        raise SchemaError("requestedSchema: property names must be strings")
    if not name:
        # The empty key is reserved for whole-form errors in validation results.
        raise SchemaError("requestedSchema: property names must not be empty")
    where = f"property {name!r}"
    if not isinstance(prop, dict):
        raise SchemaError(f"{where}: must be a JSON object")
    if "type" not in prop:
        raise SchemaError(f"{where}: must have a type")
    type_ = prop["type"]
    if not isinstance(type_, str):
        raise SchemaError(f"{where}: type must be a single string")
    title = _optional_str(prop, "title", where)
    description = _optional_str(prop, "description", where)
    base = FieldSpec(name=name, kind="string", title=title, description=description, required=required)
    match type_:
        case "object":
            raise SchemaError(f"{where}: nested objects are not allowed in elicitation forms")
        case "string" if "enum" in prop and "oneOf" in prop:
            raise SchemaError(f"{where}: use either enum or oneOf, not both")
        case "string" if "enum" in prop:
            _reject_unknown(prop, _ENUM_KEYWORDS, where, "a single-select field")
            spec = _enum_field(base, prop, where)
        case "string" if "oneOf" in prop:
            _reject_unknown(prop, _ONE_OF_KEYWORDS, where, "a single-select field")
            options = _titled_options(prop["oneOf"], f"{where}: oneOf")
            spec = dataclasses.replace(base, kind="single_select", options=options)
        case "string":
            _reject_unknown(prop, _STRING_KEYWORDS, where, "a string field")
            spec = _string_field(base, prop, where)
        case "number" | "integer":
            _reject_unknown(prop, _NUMBER_KEYWORDS, where, f"a {type_} field")
            spec = _number_field(dataclasses.replace(base, kind=type_), prop, where)
        case "boolean":
            _reject_unknown(prop, _COMMON_KEYWORDS, where, "a boolean field")
            spec = dataclasses.replace(base, kind="boolean")
        case "array":
            spec = _array_field(base, prop, where)
        case _:
            raise SchemaError(
                f"{where}: unknown type {type_!r}; allowed types are string, number, integer, boolean, array"
            )
    if "default" not in prop:
        return spec
    default, error = check_value(spec, prop["default"])
    if error is not None:
        raise SchemaError(f"{where}: default {error}")
    return dataclasses.replace(spec, default=tuple(default) if isinstance(default, list) else default)


def _string_field(base: FieldSpec, prop: dict[str, object], where: str) -> FieldSpec:
    min_length = _optional_count(prop, "minLength", where)
    max_length = _optional_count(prop, "maxLength", where)
    _check_order(prop, "minLength", "maxLength", where)
    format_ = prop.get("format")
    if "format" in prop and format_ not in _FORMATS:
        raise SchemaError(f"{where}: unknown format {format_!r}; allowed formats are {', '.join(_FORMATS)}")
    return dataclasses.replace(
        base,
        min_length=min_length,
        max_length=max_length,
        format=format_ if isinstance(format_, str) else None,
    )


def _number_field(base: FieldSpec, prop: dict[str, object], where: str) -> FieldSpec:
    minimum = _optional_number(prop, "minimum", where)
    maximum = _optional_number(prop, "maximum", where)
    _check_order(prop, "minimum", "maximum", where)
    return dataclasses.replace(base, minimum=minimum, maximum=maximum)


def _enum_field(base: FieldSpec, prop: dict[str, object], where: str) -> FieldSpec:
    values = _enum_values(prop["enum"], f"{where}: enum")
    labels = values
    if "enumNames" in prop:
        names = prop["enumNames"]
        if not isinstance(names, list):
            raise SchemaError(f"{where}: enumNames must be a list of strings")
        if len(names) != len(values):
            raise SchemaError(f"{where}: enumNames has {len(names)} entries but enum has {len(values)}")
        if not all(isinstance(label, str) for label in names):
            raise SchemaError(f"{where}: enumNames must be a list of strings")
        labels = tuple(names)
    options = tuple(Option(value, label) for value, label in zip(values, labels, strict=True))
    return dataclasses.replace(base, kind="single_select", options=options)


def _array_field(base: FieldSpec, prop: dict[str, object], where: str) -> FieldSpec:
    items = prop.get("items")
    if isinstance(items, dict) and (items.get("type") == "object" or "properties" in items):
        raise SchemaError(f"{where}: arrays of objects are not allowed in elicitation forms")
    if isinstance(items, dict) and items.get("type") == "array":
        raise SchemaError(f"{where}: nested arrays are not allowed in elicitation forms")
    _reject_unknown(prop, _ARRAY_KEYWORDS, where, "a multi-select field")
    if not isinstance(items, dict) or ("enum" in items) == ("anyOf" in items):
        raise SchemaError(f"{where}: items must list the options with either enum or anyOf")
    if items.get("type", "string") != "string":
        raise SchemaError(f'{where}: items type must be "string"')
    if "enum" in items:
        _reject_unknown(items, {"type", "enum"}, f"{where}: items", "multi-select items")
        options = tuple(Option(value, value) for value in _enum_values(items["enum"], f"{where}: items enum"))
    else:
        _reject_unknown(items, {"type", "anyOf"}, f"{where}: items", "multi-select items")
        options = _titled_options(items["anyOf"], f"{where}: items anyOf")
    min_items = _optional_count(prop, "minItems", where)
    max_items = _optional_count(prop, "maxItems", where)
    _check_order(prop, "minItems", "maxItems", where)
    return dataclasses.replace(
        base, kind="multi_select", options=options, min_items=min_items, max_items=max_items
    )


def _enum_values(enum: object, where: str) -> tuple[str, ...]:
    values = _option_list(enum, where)
    if not all(isinstance(value, str) for value in values):
        raise SchemaError(f"{where} values must be strings")
    strings = [value for value in values if isinstance(value, str)]
    _reject_duplicates(strings, where)
    return tuple(strings)


def _titled_options(entries: object, where: str) -> tuple[Option, ...]:
    options = []
    for entry in _option_list(entries, where):
        if (
            not isinstance(entry, dict)
            or entry.keys() != {"const", "title"}
            or not isinstance(entry["const"], str)
            or not isinstance(entry["title"], str)
        ):
            raise SchemaError(f'{where} entries must be {{"const": string, "title": string}}')
        options.append(Option(entry["const"], entry["title"]))
    _reject_duplicates([option.value for option in options], where)
    return tuple(options)


def _option_list(values: object, where: str) -> list[object]:
    if not isinstance(values, list) or not values:
        raise SchemaError(f"{where} must be a non-empty list")
    if len(values) > MAX_OPTIONS:
        raise SchemaError(f"{where} has {len(values)} options; at most {MAX_OPTIONS} are allowed")
    return values


def _reject_duplicates(values: list[str], where: str) -> None:
    seen: set[str] = set()
    duplicates: dict[str, None] = {}
    for value in values:
        if value in seen:
            duplicates[value] = None
        seen.add(value)
    if duplicates:
        raise SchemaError(f"{where} repeats {_quoted(duplicates)}")


def _reject_unknown(keywords: Iterable[object], allowed: Collection[str], where: str, place: str) -> None:
    unknown = [keyword for keyword in keywords if keyword not in allowed]
    if unknown:
        noun, verb = ("keyword", "is") if len(unknown) == 1 else ("keywords", "are")
        raise SchemaError(
            f"{where}: {noun} {_quoted(unknown)} {verb} not allowed on {place} in elicitation forms"
        )


def _optional_str(prop: Mapping[str, object], keyword: str, where: str) -> str | None:
    if keyword not in prop:
        return None
    value = prop[keyword]
    if not isinstance(value, str):
        raise SchemaError(f"{where}: {keyword} must be a string")
    return value


def _optional_count(prop: Mapping[str, object], keyword: str, where: str) -> int | None:
    if keyword not in prop:
        return None
    value = prop[keyword]
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"{where}: {keyword} must be a non-negative integer")
    return value


def _optional_number(prop: Mapping[str, object], keyword: str, where: str) -> float | None:
    if keyword not in prop:
        return None
    value = prop[keyword]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SchemaError(f"{where}: {keyword} must be a number")
    return value


def _check_order(prop: Mapping[str, object], low_keyword: str, high_keyword: str, where: str) -> None:
    low, high = prop.get(low_keyword), prop.get(high_keyword)
    if isinstance(low, int | float) and isinstance(high, int | float) and low > high:
        low_text, high_text = format_number(low), format_number(high)
        raise SchemaError(f"{where}: {low_keyword} ({low_text}) is greater than {high_keyword} ({high_text})")


def _quoted(names: Collection[object]) -> str:
    return ", ".join(repr(name) for name in names)
