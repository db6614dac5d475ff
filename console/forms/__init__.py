"""Elicitation forms: parse a form-mode `requestedSchema` and validate answers against it (stdlib only)."""

from console.forms.schema import FieldKind, FieldSpec, Option, SchemaError, parse_schema
from console.forms.validate import defaults, parse_form_data, validate_content

__all__ = [
    "FieldKind",
    "FieldSpec",
    "Option",
    "SchemaError",
    "defaults",
    "parse_form_data",
    "parse_schema",
    "validate_content",
]
