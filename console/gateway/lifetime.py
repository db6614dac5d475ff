"""Work that lives as long as the gateway does, beyond the request that started it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup


class GatewayTasks:
    """A task group for the gateway's lifetime: `running()` must be entered for it; until then, and after,
    `_task_group` is None."""

    def __init__(self) -> None:
        self._task_group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._task_group = tasks
            try:
                yield
            finally:
                self._task_group = None
                tasks.cancel_scope.cancel()
