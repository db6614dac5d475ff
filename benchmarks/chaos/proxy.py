"""A round-robin TCP proxy on one loopback port, in front of the console processes.

Each accepted connection goes to the next backend that accepts a connection (a dead one refuses, and
the next is tried); bytes are copied both ways until either side closes. When a backend dies, its
connections are closed on the agents too, who see a lost response and retry it with the same
Idempotency-Key. Agents open a connection per request, so requests are spread as connections are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from anyio.abc import ByteStream, SocketAttribute, SocketStream, TaskStatus

CONNECT_TIMEOUT = 2.0


@dataclass
class RoundRobinProxy:
    backends: list[tuple[str, int]] = field(default_factory=list)
    port: int = 0
    _next: int = 0

    def replace(self, old: tuple[str, int] | None, new: tuple[str, int]) -> None:
        """Put `new` where `old` was (a restarted backend listens on a new port), or add it."""
        if old in self.backends:
            self.backends[self.backends.index(old)] = new
        else:
            self.backends.append(new)

    async def serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        """Accept on 127.0.0.1 (a free port, reported through `task_status`) until cancelled."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0, backlog=1024)
        async with listener:
            self.port = listener.extra(SocketAttribute.local_port)  # noqa: S610  # anyio's, not Django's
            task_status.started(self.port)
            await listener.serve(self._handle)

    async def _handle(self, client: SocketStream) -> None:
        async with client:
            upstream = await self._connect()
            if upstream is None:  # none accepted: the agent's connection closes at once
                return
            async with upstream, anyio.create_task_group() as tg:
                tg.start_soon(_copy, client, upstream, tg.cancel_scope)
                tg.start_soon(_copy, upstream, client, tg.cancel_scope)

    async def _connect(self) -> SocketStream | None:
        for _ in range(len(self.backends)):
            host, port = self.backends[self._next % len(self.backends)]
            self._next += 1
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    return await anyio.connect_tcp(host, port)
            except (OSError, TimeoutError):  # dead or starting again: the next one is tried
                pass
        return None


async def _copy(source: ByteStream, sink: ByteStream, scope: anyio.CancelScope) -> None:
    # Either side closing (or failing) ends both directions: HTTP clients here never half-close.
    try:
        async for chunk in source:
            await sink.send(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    scope.cancel()
