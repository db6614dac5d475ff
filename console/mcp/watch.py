"""A read stream wrapper that notices when the server side goes away and fills in the default result type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse


class WatchedReadStream:
    """Delegates to the transport's read stream and calls `on_end` once it ends (EOF or close).

    Once `modern` is set (2026-07-28 negotiated), a result without `resultType` is given "complete",
    which is what the protocol says an absent one means; the SDK would reject it as invalid.
    """

    def __init__(self, inner: Any, *, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end
        self.modern = False

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item: SessionMessage | Exception = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise
        if self.modern and isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCResponse):
            item.message.result.setdefault("resultType", "complete")
        return item

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._on_end()
        await self._inner.aclose()

    def close(self) -> None:
        self._on_end()
        self._inner.close()

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
