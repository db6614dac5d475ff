"""Which console calls the gateway request being served drives (started, or answered and holds), for
`withdrawing.py` to withdraw if the agent is told the request failed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_driven: ContextVar[list[str] | None] = ContextVar("gateway_driven_calls", default=None)


def driving(call_id: str) -> None:
    """Note that the request being served drives this call."""
    calls = _driven.get()
    if calls is not None and call_id not in calls:
        calls.append(call_id)


@contextmanager
def noting() -> Iterator[list[str]]:
    """The calls the request served inside drives, as `driving` notes them."""
    calls: list[str] = []
    token = _driven.set(calls)
    try:
        yield calls
    finally:
        _driven.reset(token)
