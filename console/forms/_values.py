"""Checks one answer value against one field; shared by schema defaults and answer validation."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence

from console.forms.fields import FieldSpec, Option

# Beyond this many options, messages stop listing them all.
_MAX_LISTED_OPTIONS = 10

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s\x00-\x1f\x7f]+")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?"
    r"(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))"
)
_WHITESPACE = re.compile(r"\s")


def check_value(spec: FieldSpec, value: object) -> tuple[object, str | None]:
    """Return `(clean_value, None)` if `value` is a valid answer for `spec`, else `(None, message)`."""
    match spec.kind:
        case "string":
            return _check_string(spec, value)
        case "number" | "integer":
            return _check_number(spec, value)
        case "boolean":
            return (value, None) if isinstance(value, bool) else (None, "must be true or false")
        case "single_select":
            if isinstance(value, str) and any(value == o.value for o in spec.options):
                return value, None
            return None, "must be " + describe_options(spec.options)
        case "multi_select":
            return _check_multi(spec, value)


def describe_options(options: Sequence[Option]) -> str:
    """Describe the allowed option values for a message, e.g. `one of: staging, production`."""
    if len(options) > _MAX_LISTED_OPTIONS:
        return f"one of the {len(options)} listed options"
    return "one of: " + ", ".join(o.value for o in options)


def format_number(number: int | float) -> str:
    """Render a bound for a message: `5` rather than `5.0`, `0.5` as is."""
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return str(number)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _check_string(spec: FieldSpec, value: object) -> tuple[object, str | None]:
    if not isinstance(value, str):
        return None, "must be a string"
    if spec.min_length is not None and len(value) < spec.min_length:
        return None, f"must be at least {_plural(spec.min_length, 'character')}"
    if spec.max_length is not None and len(value) > spec.max_length:
        return None, f"must be at most {_plural(spec.max_length, 'character')}"
    match spec.format:
        case "email" if not _is_email(value):
            return None, "must be a valid email address"
        case "uri" if not _URI.fullmatch(value):
            return None, "must be an absolute URI, e.g. https://example.com/"
        case "date" if not _is_date(value):
            return None, "must be a date as YYYY-MM-DD"
        case "date-time" if not _is_date_time(value):
            return None, "must be a date and time with a timezone, e.g. 2026-07-28T09:30:00Z"
    return value, None


def _check_number(spec: FieldSpec, value: object) -> tuple[object, str | None]:
    clean: int | float
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "must be a whole number" if spec.kind == "integer" else "must be a number"
    if isinstance(value, float) and not math.isfinite(value):
        return None, "must be a finite number"
    if spec.kind == "integer":
        if isinstance(value, float) and not value.is_integer():
            return None, "must be a whole number"
        clean = int(value)
    else:
        clean = value
    if spec.minimum is not None and clean < spec.minimum:
        return None, f"must be at least {format_number(spec.minimum)}"
    if spec.maximum is not None and clean > spec.maximum:
        return None, f"must be at most {format_number(spec.maximum)}"
    return clean, None


def _check_multi(spec: FieldSpec, value: object) -> tuple[object, str | None]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        return None, "must be a list of option values"
    allowed = {o.value for o in spec.options}
    if not all(item in allowed for item in value):
        return None, "each selection must be " + describe_options(spec.options)
    if len(set(value)) != len(value):
        return None, "must not select the same option twice"
    if spec.min_items is not None and len(value) < spec.min_items:
        return None, f"must have at least {_plural(spec.min_items, 'selection')}"
    if spec.max_items is not None and len(value) > spec.max_items:
        return None, f"must have at most {_plural(spec.max_items, 'selection')}"
    return list(value), None


def _is_email(text: str) -> bool:
    local, at, domain = text.partition("@")
    labels = domain.split(".")
    return (
        bool(at and local)
        and "@" not in domain
        and len(labels) >= 2
        and all(labels)
        and not _WHITESPACE.search(text)
    )


def _is_date(text: str) -> bool:
    # date.fromisoformat alone also takes "20260728" and week dates, so pin the shape first.
    if not _DATE.fullmatch(text):
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(text: str) -> bool:
    match = _DATE_TIME.fullmatch(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    offset_hour, offset_minute = (int(g) for g in match.groups("0")[6:])
    try:
        dt.date(year, month, day)
    except ValueError:
        return False
    # RFC 3339 allows a leap second (:60), which datetime itself cannot represent.
    return hour <= 23 and minute <= 59 and second <= 60 and offset_hour <= 23 and offset_minute <= 59
