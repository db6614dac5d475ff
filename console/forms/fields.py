"""What a form field is: one property of an elicitation schema, as the form generator and checks see it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FieldKind = Literal["string", "number", "integer", "boolean", "single_select", "multi_select"]


@dataclass(frozen=True, slots=True)
class Option:
    value: str
    label: str


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str
    kind: FieldKind
    title: str | None = None
    description: str | None = None
    required: bool = False
    # A multi_select default is stored as a tuple so the spec stays immutable.
    default: object | None = None
    format: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[Option, ...] = ()
    min_items: int | None = None
    max_items: int | None = None
