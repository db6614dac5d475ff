"""Canonical JSON in the style of RFC 8785 (JCS): one exact byte string for one JSON value.

Keys are sorted by their UTF-16 code units, there is no whitespace, strings are written as UTF-8 with
only the mandatory escapes, and numbers use the ECMAScript shortest form (`1.0` is `1`, `1e21` is
`1e+21`). Deviations, chosen so that every value the console stores has one encoding: lone surrogates
are written as `\\udxxx` escapes instead of being refused, and integers beyond 2**53 are kept exact
instead of being rounded to a double.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class NotCanonicalizable(ValueError):
    """The value has no JSON form (NaN, infinity, a non-string key, an unknown type)."""


@dataclass(frozen=True)
class Verbatim:
    """A value given as the text `canonical` wrote for it, which is written as it is instead of walked
    again (canonical text parsed and written again is the same text)."""

    text: str


def canonical(value: Any) -> str:
    """The canonical JSON text of a value built from dict, list, str, int, float, bool and None."""
    parts: list[str] = []
    _write(value, parts)
    return "".join(parts)


def canonical_bytes(value: Any) -> bytes:
    return canonical(value).encode("utf-8")


def loads(text: str) -> Any:
    """Parse JSON, refusing the NaN and Infinity literals Python would otherwise accept."""

    def refuse(name: str) -> Any:
        raise NotCanonicalizable(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _write(value: Any, parts: list[str]) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(str(value))
    elif isinstance(value, float):
        parts.append(number(value))
    elif isinstance(value, str):
        parts.append(_string(value))
    elif isinstance(value, list | tuple):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    elif isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise NotCanonicalizable("object keys must be strings")
        parts.append("{")
        for index, key in enumerate(sorted(value, key=_utf16_order)):
            if index:
                parts.append(",")
            parts.append(_string(key))
            parts.append(":")
            _write(value[key], parts)
        parts.append("}")
    elif isinstance(value, Verbatim):
        parts.append(value.text)
    else:
        raise NotCanonicalizable(f"{type(value).__name__} is not a JSON type")


_NEEDS_ESCAPE = re.compile('[\x00-\x1f"\\\\\ud800-\udfff]')


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _string(text: str) -> str:
    if _NEEDS_ESCAPE.search(text) is None:  # most strings: nothing to escape
        return f'"{text}"'
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def number(value: float) -> str:
    """ECMAScript Number::toString of a finite double (RFC 8785 section 3.2.2.3)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise NotCanonicalizable("NaN and infinity are not JSON")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)  # noqa: S101  # finite, checked above
    # Decimal's exponent counts from the last digit as written; n is where the point goes.
    n = exponent + len("".join(map(str, digit_tuple)))
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
