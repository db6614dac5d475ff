"""Validate elicitation answers (API JSON or HTML form posts) against parsed field specs."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from console.forms._values import check_value
from console.forms.fields import FieldSpec

__all__ = ["defaults", "parse_form_data", "validate_content"]

# Beyond this many unknown names, the whole-form message stops listing them.
_MAX_LISTED_UNKNOWN = 10
_CHECKED = frozenset({"true", "on"})
_UNCHECKED = frozenset({"false", "off", ""})
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def validate_content(
    fields: Sequence[FieldSpec], content: object
) -> tuple[dict[str, object], dict[str, str]]:
    """Check an `accept` answer's content; return `(clean, errors)` with `""` keying whole-object errors."""
    if not isinstance(content, dict):
        return {}, {"": "content must be a JSON object"}
    return _validate_fields(fields, content, {})


def parse_form_data(
    fields: Sequence[FieldSpec], form: Mapping[str, Sequence[str]]
) -> tuple[dict[str, object], dict[str, str]]:
    """Convert an HTML form post (name -> submitted values) to content and validate it like an API answer."""
    content: dict[object, object] = dict(form.items())
    errors: dict[str, str] = {}
    for spec in fields:
        content.pop(spec.name, None)
        values = _values_of(form.get(spec.name))
        value, error = _convert(spec, values)
        if error is not None:
            errors[spec.name] = error
        elif value is not None:
            content[spec.name] = value
    return _validate_fields(fields, content, errors)


def defaults(fields: Sequence[FieldSpec]) -> dict[str, object]:
    """Return the schema default for every field that has one, in answer shape (multi-select as a list)."""
    return {
        spec.name: list(spec.default) if isinstance(spec.default, tuple) else spec.default
        for spec in fields
        if spec.default is not None
    }


def _validate_fields(
    fields: Sequence[FieldSpec], content: Mapping[object, object], errors: dict[str, str]
) -> tuple[dict[str, object], dict[str, str]]:
    """Check `content` field by field; fields already in `errors` (failed conversion) are skipped."""
    known = {spec.name for spec in fields}
    unknown = [key for key in content if key not in known]
    if unknown:
        errors[""] = _describe_unknown(unknown)
    clean: dict[str, object] = {}
    for spec in fields:
        if spec.name in errors:
            continue
        if spec.name not in content:
            if spec.required:
                errors[spec.name] = "is required"
            continue
        value, error = check_value(spec, content[spec.name])
        if error is None:
            clean[spec.name] = value
        else:
            errors[spec.name] = error
    return clean, errors


def _describe_unknown(names: Sequence[object]) -> str:
    listed = ", ".join(str(name) for name in names[:_MAX_LISTED_UNKNOWN])
    more = len(names) - _MAX_LISTED_UNKNOWN
    suffix = f" and {more} more" if more > 0 else ""
    return f"unknown fields: {listed}{suffix}"


def _values_of(raw: Sequence[str] | None) -> list[str]:
    if raw is None:
        return []
    # A bare string is a Sequence[str] too; treat it as one submitted value, not as characters.
    return [raw] if isinstance(raw, str) else list(raw)


def _convert(spec: FieldSpec, values: list[str]) -> tuple[object, str | None]:
    """Turn submitted strings into a JSON-shaped value; `(None, None)` means the field was left empty."""
    if spec.kind == "boolean":
        # A hidden "false" input next to the checkbox is a common pattern; "false" plus "true" means checked.
        if not all(value in _CHECKED or value in _UNCHECKED for value in values):
            return None, "must be true or false"
        return any(value in _CHECKED for value in values), None
    if spec.kind == "multi_select":
        chosen = [value for value in values if value]
        # An unticked optional group is unanswered; an unticked required group answers "none of these".
        return (chosen if chosen or spec.required else None), None
    numeric = spec.kind in ("number", "integer")
    filled = [value for value in values if (value.strip() if numeric else value)]
    if len(filled) > 1:
        return None, "must have a single value"
    if not filled:
        return None, None
    return _parse_number(spec, filled[0].strip()) if numeric else (filled[0], None)


def _parse_number(spec: FieldSpec, text: str) -> tuple[object, str | None]:
    message = "must be a whole number" if spec.kind == "integer" else "must be a number"
    try:
        if _INTEGER.fullmatch(text):
            return int(text), None
        if _DECIMAL.fullmatch(text):
            number = float(text)
            return (number, None) if math.isfinite(number) else (None, message)
    except ValueError:
        # int() refuses absurdly long digit strings (CPython's int_max_str_digits guard).
        return None, message
    return None, message
