"""Turn field specs into widgets for `templates/_macros/forms.html`, and the HTML post back into content.

Property names are untrusted server text, so they never become HTML names or ids: field `i` is posted as
`f{i}` and rendered with the id `field-{i}`.

Date-time fields use a `datetime-local` input that shows and accepts **UTC**, to the minute. A stored RFC 3339
value is converted to UTC and shown as `2026-01-02T03:04` (seconds and fractions are dropped, because a
`datetime-local` input with the default step refuses them). A posted `2026-01-02T03:04` goes back as
`2026-01-02T03:04:00Z` (with seconds, `…:05` becomes `…:05Z`); anything else is passed on unchanged, so a full
RFC 3339 value from a script still works and a malformed one gets the usual validation message.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from console.forms._values import format_number
from console.forms.fields import FieldSpec
from console.forms.validate import parse_form_data

__all__ = ["MAX_RADIO_OPTIONS", "Choice", "Widget", "WidgetKind", "build_widgets", "form_to_content"]

WidgetKind = Literal[
    "text", "email", "url", "date", "datetime-local", "number", "checkbox", "radio", "select", "checkboxes"
]

# Up to this many options a single-select is a radio group; beyond it, a <select>.
MAX_RADIO_OPTIONS = 5

_STRING_KINDS: dict[str | None, WidgetKind] = {
    None: "text",
    "email": "email",
    "uri": "url",
    "date": "date",
    "date-time": "datetime-local",
}
_CHECKED = frozenset({"true", "on"})
_LOCAL_DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?")


@dataclass(frozen=True, slots=True)
class Choice:
    """One radio button, select option or checkbox of a group; `checked` renders as `selected` in a select."""

    value: str
    label: str
    dom_id: str
    checked: bool


@dataclass(frozen=True, slots=True)
class Widget:
    """Everything the macros need to render one field; all text in it is escaped by the template.

    `required` means the person must enter something, so it is False for a single checkbox (unticked answers
    false) and for a checkbox group unless it is required with a `minItems` of at least 1.
    `blank_label` is the text of the extra empty choice ("Choose…" in a select, "No answer" in an optional
    radio group), or None when there is none. `hint` is console-written text about constraints (items, UTC).
    """

    name: str
    input_name: str
    dom_id: str
    kind: WidgetKind
    label: str
    help: str | None = None
    hint: str | None = None
    required: bool = False
    min_length: int | None = None
    max_length: int | None = None
    minimum: str | None = None
    maximum: str | None = None
    step: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    options: tuple[Choice, ...] = ()
    blank_label: str | None = None
    value: str = ""
    checked: bool = False
    error: str | None = None

    @property
    def help_id(self) -> str:
        return f"{self.dom_id}-help"

    @property
    def hint_id(self) -> str:
        return f"{self.dom_id}-hint"

    @property
    def error_id(self) -> str:
        return f"{self.dom_id}-error"

    @property
    def blank_id(self) -> str:
        return f"{self.dom_id}-none"

    @property
    def blank_chosen(self) -> bool:
        """Whether the empty choice is the current one, because no option is chosen."""
        return not any(choice.checked for choice in self.options)

    @property
    def described_by(self) -> str | None:
        """The `aria-describedby` value: ids of the help text, hint and error that are shown."""
        ids = [
            element_id
            for element_id, shown in (
                (self.help_id, self.help is not None),
                (self.hint_id, self.hint is not None),
                (self.error_id, self.error is not None),
            )
            if shown
        ]
        return " ".join(ids) or None


def build_widgets(
    fields: Sequence[FieldSpec],
    values: Mapping[str, object] | None = None,
    errors: Mapping[str, str] | None = None,
    *,
    submitted: Mapping[str, Sequence[str]] | None = None,
) -> tuple[Widget, ...]:
    """Build one widget per field, filled from `submitted`, else `values`, else the schema defaults.

    `values` holds typed content keyed by property name (a missing name shows an empty field). `submitted` is
    the raw form post keyed by input name (`f0`, `f1`, …), used to re-render exactly what the person typed.
    `errors` are validation messages keyed by property name, as `form_to_content` returns them ("is required"
    is shown as "This field is required"); the whole-form error under `""` is the caller's to show.
    """
    errors = errors or {}
    widgets = []
    for index, spec in enumerate(fields):
        input_name = f"f{index}"
        if submitted is not None:
            current = _current_from_form(spec, _values_of(submitted.get(input_name)))
        elif values is None:
            current = _current_from_value(spec, spec.default)
        else:
            current = _current_from_value(spec, values.get(spec.name))
        message = errors.get(spec.name)
        widgets.append(
            _widget(spec, index, input_name, current, None if message is None else f"This field {message}")
        )
    return tuple(widgets)


def form_to_content(
    fields: Sequence[FieldSpec], form: Mapping[str, Sequence[str]]
) -> tuple[dict[str, object], dict[str, str]]:
    """Validate an HTML post of these widgets; return `(content, errors)` keyed by property name.

    Keys other than `f0`, `f1`, … (CSRF token, digest, buttons) are ignored.
    """
    by_name: dict[str, list[str]] = {}
    for index, spec in enumerate(fields):
        raw = form.get(f"f{index}")
        if raw is None:
            continue
        posted = _values_of(raw)
        by_name[spec.name] = [_from_local(v) for v in posted] if spec.format == "date-time" else posted
    return parse_form_data(fields, by_name)


def _widget(spec: FieldSpec, index: int, input_name: str, current: set[str], error: str | None) -> Widget:
    dom_id = f"field-{index}"
    kind = _kind(spec)
    text = next(iter(current), "")
    options = tuple(
        Choice(option.value, option.label, f"{dom_id}-{position}", option.value in current)
        for position, option in enumerate(spec.options)
    )
    blank_label = None
    if kind == "select" and (not spec.required or spec.default is None):
        blank_label = "Choose…"
    elif kind == "radio" and not spec.required:
        blank_label = "No answer"
    required = spec.required
    if kind == "checkbox":
        required = False
    elif kind == "checkboxes":
        required = spec.required and (spec.min_items or 0) > 0
    minimum, maximum = spec.minimum, spec.maximum
    if spec.kind == "integer":
        # The browser counts steps from `min`, so a fractional bound would make every whole number invalid.
        minimum = None if minimum is None else math.ceil(minimum)
        maximum = None if maximum is None else math.floor(maximum)
    return Widget(
        name=spec.name,
        input_name=input_name,
        dom_id=dom_id,
        kind=kind,
        label=spec.title if spec.title is not None else spec.name,
        help=spec.description,
        hint=_hint(spec, kind),
        required=required,
        min_length=spec.min_length,
        max_length=spec.max_length,
        minimum=None if minimum is None else format_number(minimum),
        maximum=None if maximum is None else format_number(maximum),
        step={"integer": "1", "number": "any"}.get(spec.kind),
        min_items=spec.min_items,
        max_items=spec.max_items,
        options=options,
        blank_label=blank_label,
        value=_to_local(text) if kind == "datetime-local" else text,
        checked=kind == "checkbox" and "true" in current,
        error=error,
    )


def _kind(spec: FieldSpec) -> WidgetKind:
    match spec.kind:
        case "string":
            return _STRING_KINDS.get(spec.format, "text")
        case "number" | "integer":
            return "number"
        case "boolean":
            return "checkbox"
        case "single_select":
            return "radio" if len(spec.options) <= MAX_RADIO_OPTIONS else "select"
        case "multi_select":
            return "checkboxes"


def _hint(spec: FieldSpec, kind: WidgetKind) -> str | None:
    if kind == "datetime-local":
        return "Time in UTC."
    low = spec.min_items or 0
    high = spec.max_items
    if kind != "checkboxes" or (low == 0 and high is None):
        return None
    if high is None:
        return f"Choose at least {low}."
    if low == high:
        return f"Choose exactly {low}."
    return f"Choose at most {high}." if low == 0 else f"Choose {low} to {high}."


def _current_from_value(spec: FieldSpec, value: object) -> set[str]:
    """The chosen option values, or the single text of a text-like field ("true" for a ticked checkbox)."""
    if isinstance(value, bool):
        return {"true"} if value else set()
    if isinstance(value, str):
        return {value}
    if isinstance(value, int | float):
        return {format_number(value)}
    if isinstance(value, list | tuple) and spec.kind == "multi_select":
        return {item for item in value if isinstance(item, str)}
    return set()


def _current_from_form(spec: FieldSpec, posted: list[str]) -> set[str]:
    if spec.kind == "boolean":
        return {"true"} if any(v in _CHECKED for v in posted) else set()
    if spec.kind == "multi_select":
        return set(posted)
    # Keep the first filled value; more than one is a tampered post and is reported by validation.
    return {next((v for v in posted if v), "")}


def _values_of(raw: Sequence[str] | None) -> list[str]:
    if raw is None:
        return []
    return [raw] if isinstance(raw, str) else list(raw)


def _to_local(text: str) -> str:
    """Show an RFC 3339 date-time as a UTC `datetime-local` value; other text is returned as is."""
    try:
        moment = dt.datetime.fromisoformat(text.upper())
        if moment.tzinfo is None:
            return text
        # isoformat, unlike strftime, always writes a four-digit year.
        return moment.astimezone(dt.UTC).isoformat(timespec="minutes")[:16]
    except (ValueError, OverflowError):
        return text


def _from_local(text: str) -> str:
    """Turn a `datetime-local` value (read as UTC) into RFC 3339; other text is returned as is."""
    match = _LOCAL_DATE_TIME.fullmatch(text)
    if match is None:
        return text
    return text + "Z" if match.group(1) else text + ":00Z"
