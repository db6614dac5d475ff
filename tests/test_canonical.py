"""Canonical JSON: one byte string per value, as RFC 8785 prescribes for the types the log stores."""

from __future__ import annotations

import json

import pytest

from console.canonical import NotCanonicalizable, Verbatim, canonical, loads, number


def test_keys_sorted_without_whitespace_and_text_kept_as_utf8() -> None:
    value = {"b": [1, True, None], "a": {"z": "é€😀", "y": "tab\there"}, "": 0}
    assert canonical(value) == '{"":0,"a":{"y":"tab\\there","z":"é€😀"},"b":[1,true,null]}'


def test_keys_sort_by_utf16_code_units_as_rfc8785_requires() -> None:
    # U+1F600 is a surrogate pair (0xD83D...), which sorts before U+FB33 in UTF-16 though not in UTF-32.
    assert canonical({"\ufb33": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb33":1}'


def test_control_characters_use_short_or_lowercase_hex_escapes() -> None:
    assert canonical('\x00\x1f\b\f\n\r"\\/') == '"\\u0000\\u001f\\b\\f\\n\\r\\"\\\\/"'


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (0.5, "0.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (123.456, "123.456"),
        (-1.25e300, "-1.25e+300"),
        (5e-324, "5e-324"),
    ],
)
def test_numbers_use_the_ecmascript_shortest_form(value: float, text: str) -> None:
    assert number(value) == text


def test_integers_and_round_trips_are_stable() -> None:
    value = {"n": 9007199254740993, "f": 2.5, "s": ["x"]}
    text = canonical(value)
    assert canonical(loads(text)) == text
    assert json.loads(text) == value


@pytest.mark.parametrize(
    "value",
    [
        {"f": [1.0, 1e21, 1e20, 1.5e-7, -0.0, 123.456, 5e-324], "n": 2**64 + 1},
        {"\ufb33": "\ud800 lone", "\U0001f600": {"tab\t": "\x00é€"}, "": None},
        [True, False, None, [], {}, "plain"],
    ],
)
def test_canonical_text_given_verbatim_is_written_as_the_value_would_be(value: object) -> None:
    # What the audit chain relies on: an event's payload, stored as canonical text, hashes as its value.
    assert canonical({"a": 1, "payload": Verbatim(canonical(value)), "z": 2}) == canonical(
        {"a": 1, "payload": loads(canonical(value)), "z": 2}
    )
    assert canonical(loads(canonical(value))) == canonical(value)


def test_values_without_a_json_form_are_refused() -> None:
    for bad in (float("nan"), float("inf"), {1: "x"}, object()):
        with pytest.raises(NotCanonicalizable):
            canonical(bad)
    with pytest.raises(NotCanonicalizable):
        loads('{"x": NaN}')
