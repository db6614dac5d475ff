"""Elicitation forms: parse a form-mode `requestedSchema` and validate answers against it (stdlib only)."""

from console.forms.fields import FieldKind, FieldSpec, Option
from console.forms.schema import SchemaError, parse_schema
from console.forms.validate import defaults, parse_form_data, validate_content
from console.forms.widgets import Choice, Widget, WidgetKind, build_widgets, form_to_content

__all__ = [
    "Choice",
    "FieldKind",
    "FieldSpec",
    "Option",
    "SchemaError",
    "Widget",
    "WidgetKind",
    "build_widgets",
    "defaults",
    "form_to_content",
    "parse_form_data",
    "parse_schema",
    "validate_content",
]
