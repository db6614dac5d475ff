"""What a running console keeps: one frozen `Runtime`, built by `create_app` and stored on the app here only.

Routes get it through the `RuntimeDep` dependency (`console/web/deps.py`); middleware, exception handlers,
the gateway and the CLI, which have the app but no dependencies, through `runtime_of(app)`. What changes
as the app starts and stops lives in its `Lifecycle`, not in loose attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
from jinja2_fragments.fastapi import Jinja2Blocks
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from console.attestation import Attester
from console.audit import Sequencer
from console.background import Health
from console.config import Settings
from console.dispatch.signals import Signals
from console.dispatch.worker import Dispatcher
from console.identity.oidc_client import OidcClient
from console.mcp.pool import ConnectionPool
from console.notify.sender import Notifier

# The demo's mailbox: the messages kept for one address (console/demo/mailbox.py).
Mailbox = Callable[[str], list[Any]]


class Stopping:
    """The open requests' cancel scopes; `on_stop` runs before the grace they are given."""

    def __init__(self, on_stop: Callable[[], None]) -> None:
        self.stopped = False
        self._on_stop = on_stop
        self._open: set[anyio.CancelScope] = set()

    async def stop_after(self, grace: float) -> None:
        """Run `on_stop` (waiters answer as things stand), give the open requests `grace` seconds to end
        by themselves, then end the rest."""
        if not self.stopped:
            self._on_stop()
        self.stopped = True
        with anyio.move_on_after(grace):
            while self._open:  # noqa: ASYNC110  # requests end in the server's tasks, and tell no one
                await anyio.sleep(0.05)
        for scope in self._open:
            scope.cancel()

    def opened(self, scope: anyio.CancelScope) -> None:
        if self.stopped:
            scope.cancel()
        self._open.add(scope)

    def closed(self, scope: anyio.CancelScope) -> None:
        self._open.discard(scope)


@dataclass
class Lifecycle:
    """The parts of a console that change while it runs: whether it serves (`/readyz`), what keeps its
    background loops from their work (`health`; `serve_app` ends when one ends), and its stop."""

    health: Health
    stopping: Stopping
    ready: bool = False


@dataclass(frozen=True)
class Runtime:
    """Every object one console app keeps, from its settings to its background workers."""

    settings: Settings
    engine: AsyncEngine
    factory: async_sessionmaker[AsyncSession]
    signals: Signals
    pool: ConnectionPool
    sequencer: Sequencer
    dispatcher: Dispatcher | None  # None: this process sends nothing, `console worker`s do
    notifier: Notifier | None  # None: notifications are sent by another process
    attester: Attester | None  # None: the sends people approved go unsigned
    jwks_body: bytes  # /.well-known/jwks.json, the attester's public keys
    templates: Jinja2Blocks
    oidc_client: OidcClient | None  # None without single sign-on
    demo: bool  # the sign-in page names the demo's users
    demo_mailbox: Mailbox | None
    life: Lifecycle


class _App(Protocol):
    state: Any


def store(app: _App, runtime: Runtime) -> None:
    """Store the app's runtime: the one place the console writes the app's state."""
    app.state.runtime = runtime


def runtime_of(app: _App) -> Runtime:
    found = getattr(app.state, "runtime", None)
    if not isinstance(found, Runtime):
        raise RuntimeError("the app was not made by console.app.create_app")
    return found
