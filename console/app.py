"""The application factory: the one place where settings, database, MCP pool and dispatcher are wired."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from console import __version__
from console.audit import Sequencer, session_info
from console.background import Health, keep_going
from console.calls.fanout import carriers_for
from console.calls.restored import hold_if_restored
from console.config import Settings, get_settings, secret_text
from console.db import create_engine, session_factory
from console.dispatch.signals import Signals
from console.dispatch.wakeups import across_processes
from console.dispatch.worker import Dispatcher
from console.gateway.endpoint import METHODS, PATH, Gateway
from console.identity.attester import attester_from
from console.identity.credentials import CredentialCipher
from console.identity.oidc_client import OidcClient, ProviderConfig
from console.mcp.pool import ConnectionPool
from console.mcp.sealed import seal_plain_values
from console.mcp.transports import Transports
from console.notify.sender import Notifier
from console.resources import STATIC
from console.runtime import Lifecycle, Mailbox, Runtime, Stopping, store
from console.transactions import transaction
from console.web import (
    admin,
    admin_notify,
    admin_servers,
    api,
    api_docs,
    audit,
    connect,
    connections,
    demo_mailbox,
    errors,
    health,
    inbox,
    jwks,
    login,
    notifications,
    oauth,
    oidc,
    policies,
    questions,
    reauth,
    runs,
    tokens,
)
from console.web.front import ServedFirst
from console.web.limits import BodyLimits, limits
from console.web.security import SecurityHeaders
from console.web.stopping import EndedWhenStopping
from console.web.templating import make_templates

WEB_ROUTERS = (
    login.router,
    oidc.router,
    reauth.router,
    inbox.router,
    questions.router,
    connect.router,
    connections.router,
    oauth.router,
    runs.router,
    tokens.router,
    notifications.router,
    demo_mailbox.router,
    policies.router,
    admin.router,
    admin_servers.router,
    admin_notify.router,
    audit.router,
)


def _stop_waiting(gateway: Gateway, signals: Signals) -> None:
    """The server begins to stop: the gateway withdraws no call from now on, and every request waiting
    on a call (an agent's held request, a long-poll) answers with the call as it stands."""
    gateway.stop()
    signals.stop_waiting()


def build_runtime(
    settings: Settings,
    gateway: Gateway,
    *,
    dispatcher: bool,
    notifier: bool,
    demo: bool,
    demo_mailbox: Mailbox | None,
    transports: Transports | None = None,
) -> Runtime:
    """Every object the app keeps; nothing here opens a connection or starts a task (the lifespan does)."""
    attester = attester_from(settings)  # before anything starts: an unreadable key stops the app here
    engine = create_engine(settings.database_url, pool_size=settings.database_pool_size)
    factory = session_factory(engine, info=session_info(settings))
    signals = Signals()
    pool = ConnectionPool.of(settings, transports)
    # `serve_app` ends when a background loop ends (health); the stop is told to the gateway and waiters.
    life = Lifecycle(health=Health(), stopping=Stopping(on_stop=partial(_stop_waiting, gateway, signals)))
    provider = ProviderConfig.of(settings)
    return Runtime(
        settings=settings,
        engine=engine,
        factory=factory,
        signals=signals,
        pool=pool,
        sequencer=Sequencer(factory),
        dispatcher=Dispatcher(
            factory=factory,
            pool=pool,
            settings=settings,
            signals=signals,
            attester=attester,
            health=life.health,
        )
        if dispatcher
        else None,
        notifier=_notifier(settings, factory, signals) if notifier else None,
        attester=attester,
        jwks_body=jwks.key_set_body(attester),
        templates=make_templates(),
        oidc_client=OidcClient(provider) if provider is not None else None,
        demo=demo,
        demo_mailbox=demo_mailbox,
        life=life,
    )


def _notifier(settings: Settings, factory: async_sessionmaker[AsyncSession], signals: Signals) -> Notifier:
    return Notifier(
        factory=factory,
        carriers=carriers_for(settings),
        wait_for_change=signals.wait_for_change,
        changed=signals.something_changed,
    )


def create_app(
    settings: Settings | None = None,
    *,
    dispatcher: bool = True,
    notifier: bool = True,
    demo: bool = False,
    demo_mailbox: Mailbox | None = None,
    transports: Transports | None = None,
) -> FastAPI:
    """The console's ASGI app; with `dispatcher`, resumes are sent from this process too, and with
    `notifier` the notifications (when an SMTP server is set); `demo` tells the sign-in page to name the
    demo's users, and `demo_mailbox` reads the demo's mail for its mailbox page. `transports` reaches some
    MCP servers in a way of its own (console/mcp/transports.py: the tests' in-memory servers)."""
    settings = settings or get_settings()
    gateway = Gateway(settings)
    runtime = build_runtime(
        settings,
        gateway,
        dispatcher=dispatcher,
        notifier=notifier,
        demo=demo,
        demo_mailbox=demo_mailbox,
        transports=transports,
    )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        factory, life = runtime.factory, runtime.life
        kept = partial(keep_going, health=life.health, factory=factory)
        async with transaction(factory) as session:
            await seal_plain_values(session=session, cipher=CredentialCipher(secret_text(settings)))
        try:
            await hold_if_restored(factory, settings)  # before anything is sent
            async with (
                runtime.pool,
                across_processes(settings.database_url, runtime.signals),
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(kept, "audit sequencer", runtime.sequencer.run)
                if runtime.dispatcher is not None:
                    tg.start_soon(kept, "dispatcher", runtime.dispatcher.run)
                if runtime.notifier is not None:
                    tg.start_soon(kept, "notifier", runtime.notifier.run)
                async with gateway.running(runtime):
                    life.ready = True
                    yield
                    life.ready = False
                tg.cancel_scope.cancel()
        finally:
            await runtime.engine.dispose()

    app = FastAPI(
        title="Approval console",
        version=__version__,
        lifespan=lifespan,
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # console/web/api_docs.py serves it with vendored assets
        redoc_url=None,
    )
    store(app, runtime)
    errors.install(app)
    app.include_router(health.router)
    app.include_router(jwks.router)
    app.include_router(api.router)
    app.include_router(api_docs.router)
    for router in WEB_ROUTERS:
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    # The MCP gateway (console/gateway), ahead of the routes; innermost, inside the caps and headers.
    app.add_middleware(ServedFirst, pattern=PATH, endpoint=gateway, methods=METHODS)
    app.add_middleware(SecurityHeaders, https=settings.base_url.startswith("https://"))
    app.add_middleware(BodyLimits, limit_for=limits(max_params_bytes=settings.max_params_bytes))
    # Outside the caps, so that the requests still open when `console serve` stops end at once.
    app.add_middleware(EndedWhenStopping, stopping=runtime.life.stopping)
    if settings.trusted_proxy_list:
        # Outermost, so everything inside sees the client the trusted proxy names (right-most untrusted
        # X-Forwarded-For address); requests from anyone else keep their own address.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxy_list)
    return app
