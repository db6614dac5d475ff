"""Cutting one member out of a JSON object as the exact text the sender wrote."""

from __future__ import annotations

import json
from json.decoder import scanstring  # type: ignore[attr-defined]  # public in CPython, untyped in typeshed

_WHITESPACE = " \t\n\r"
_DECODER = json.JSONDecoder()


def member_text(document: str, name: str) -> str | None:
    """The raw text of top-level member `name` of the JSON object `document`, or None if absent.

    Raises:
        ValueError: `document` is not a JSON object.
    """
    found: str | None = None
    i = _skip(document, 0)
    if document[i : i + 1] != "{":
        raise ValueError("expected a JSON object")
    i = _skip(document, i + 1)
    if document[i : i + 1] == "}":
        return None
    while True:
        if document[i : i + 1] != '"':
            raise ValueError("expected a member name")
        key, i = scanstring(document, i + 1)
        i = _skip(document, i)
        if document[i : i + 1] != ":":
            raise ValueError("expected ':'")
        start = _skip(document, i + 1)
        _value, end = _DECODER.raw_decode(document, start)
        if key == name:
            found = document[start:end]  # the last duplicate wins, as in json.loads
        i = _skip(document, end)
        if document[i : i + 1] == ",":
            i = _skip(document, i + 1)
            continue
        if document[i : i + 1] == "}":
            return found
        raise ValueError("expected ',' or '}'")


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WHITESPACE:
        i += 1
    return i
