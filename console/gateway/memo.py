"""What the gateway remembers for a few seconds between an agent's requests, so a call costs no more
reads than it must: each caller's catalog, and which run each agent's key names.

Nothing here decides access: the call itself is checked again when it starts (server, tool, owner).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

from console.gateway.catalog import Catalog

K = TypeVar("K")
V = TypeVar("V")
CATALOG_SECONDS = 5.0
RUN_SECONDS = 3600.0
SESSION_SECONDS = 1800.0  # as long as the SDK keeps an idle 2025-11-25 session
# Which catalog the request being served reads: (token id, the path's server or None for /mcp).
CALLER: ContextVar[tuple[str, str | None] | None] = ContextVar("gateway_caller", default=None)


class Recent(Generic[K, V]):
    """A small map whose entries live `seconds`; past `size` the oldest go."""

    def __init__(self, *, seconds: float, size: int = 10_000) -> None:
        self._seconds = seconds
        self._size = size
        self._items: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def get(self, key: K) -> V | None:
        kept = self._items.get(key)
        if kept is None or time.monotonic() - kept[0] > self._seconds:
            return None
        return kept[1]

    def clear(self) -> None:
        self._items.clear()

    def put(self, key: K, value: V) -> None:
        self._items[key] = (time.monotonic(), value)
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


class Memo:
    def __init__(self) -> None:
        self.catalogs: Recent[tuple[str, str | None, tuple[str, ...]], Catalog] = Recent(
            seconds=CATALOG_SECONDS
        )
        self.runs: Recent[tuple[str, str], str] = Recent(seconds=RUN_SECONDS)  # (user id, key) -> run id
        # The log level each 2025-11-25 session set (logging/setLevel): (token id, session id) -> level.
        self.log_levels: Recent[tuple[str, str], str] = Recent(seconds=SESSION_SECONDS)

    def input_schema(self, name: str) -> Any | None:
        """The inputSchema the current caller was last shown for the tool (the SDK checks `Mcp-Param-*`
        headers against it); None, so the check is skipped, when it has not listed tools lately."""
        caller = CALLER.get()
        if caller is None:
            return None
        catalog = self.catalogs.get((*caller, ("tools",)))
        entry = catalog.tools.get(name) if catalog is not None else None
        return entry.item.get("inputSchema") if entry is not None else None
