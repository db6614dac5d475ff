"""Whether parsed JSON from an agent can be stored, audited and sent on: bounded nesting, real text."""

from __future__ import annotations

import json
import math
from typing import Any

from console.errors import InvalidInput

MAX_DEPTH = 64
MAX_REPORTED = 20  # field errors per body: enough to fix it, never a reply larger than the request
NAME_SHOWN = 60
NOT_TEXT = "is not valid Unicode text (it contains a lone surrogate)"
NAME_NOT_TEXT = "has a member name that is not valid Unicode text (a lone surrogate)"


def parse_json(text: str, what: str) -> Any:
    """The JSON value of `text`, if it can be stored, audited and sent on.

    Raises:
        InvalidInput: naming the field at fault (`body` when the text is not JSON at all).
    """
    try:
        value = _loads(text)
    except RecursionError:
        raise InvalidInput(f"invalid {what}", {"body": f"nests deeper than {MAX_DEPTH} levels"}) from None
    except ValueError as exc:
        raise InvalidInput(f"invalid {what}", {"body": f"is not JSON: {exc}"}) from None
    problems = json_problems(value)
    if problems:
        raise InvalidInput(f"invalid {what}", problems)
    return value


def _loads(text: str) -> Any:
    """`json.loads` without the extensions JSON does not have (NaN, Infinity, numbers beyond a double)."""
    return json.loads(text, parse_float=_finite, parse_constant=_refuse_constant)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON value")


def json_problems(value: Any, *, max_depth: int = MAX_DEPTH) -> dict[str, str]:
    """Field errors, by dotted path (`params.arguments.x`), for text that is not Unicode and for nesting
    deeper than `max_depth` (reported on the top-level member it is under).

    A lone surrogate such as "\\ud800" is a valid JSON escape, but no UTF-8 encoder (the database, the
    audit hash, the MCP transport) can write it.
    """
    errors: dict[str, str] = {}
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack and len(errors) < MAX_REPORTED:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if not _is_text(item):
                errors[where or "body"] = NOT_TEXT
        elif isinstance(item, dict | list):
            if depth > max_depth:
                errors[where.split(".", 1)[0]] = f"nests deeper than {max_depth} levels"
                break
            members = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in members:
                if not _is_text(str(key)):
                    errors[where or "body"] = NAME_NOT_TEXT
                    continue
                name = _shown(key)
                stack.append((child, f"{where}.{name}" if where else name, depth + 1))
    return errors


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(key: object) -> str:
    name = str(key)
    return name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…"
