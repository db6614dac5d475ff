"""The application factory: the one place where settings, database, MCP pool and dispatcher are wired."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from console import __version__
from console.audit import Sequencer, session_info
from console.background import Health, keep_going
from console.calls.fanout import carriers_for
from console.config import Settings, get_settings, secret_text
from console.db import create_engine, session_factory
from console.dispatch.restored import hold_if_restored
from console.dispatch.signals import Signals
from console.dispatch.wakeups import across_processes
from console.dispatch.worker import Dispatcher
from console.gateway.endpoint import METHODS, PATH, Gateway
from console.identity.attester import attester_from
from console.identity.credentials import CredentialCipher
from console.mcp.pool import ConnectionPool
from console.mcp.sealed import seal_plain_values
from console.notify.sender import Notifier
from console.resources import STATIC
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
from console.web.stopping import EndedWhenStopping, Stopping
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


def _stop_waiting(app: FastAPI, gateway: Gateway) -> None:
    """The server begins to stop: the gateway withdraws no call from now on, and every request waiting
    on a call (an agent's held request, a long-poll) answers with the call as it stands."""
    gateway.stop()
    signals = getattr(app.state, "signals", None)  # set as the app starts
    if signals is not None:
        signals.stop_waiting()


def create_app(
    settings: Settings | None = None, *, dispatcher: bool = True, notifier: bool = True, demo: bool = False
) -> FastAPI:
    """The console's ASGI app; with `dispatcher`, resumes are sent from this process too, and with
    `notifier` the notifications (when an SMTP server is set); `demo` tells the sign-in page to name the
    demo's users."""
    settings = settings or get_settings()
    attester = attester_from(settings)  # before anything starts: an unreadable key stops the app here
    gateway = Gateway(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, pool_size=settings.database_pool_size)
        app.state.factory = session_factory(engine, info=session_info(settings))
        app.state.signals = Signals()
        health = app.state.health
        kept = partial(keep_going, health=health, factory=app.state.factory)
        async with app.state.factory() as session:
            await seal_plain_values(session=session, cipher=CredentialCipher(secret_text(settings)))
        try:
            await hold_if_restored(app.state.factory, settings)  # before anything is sent
            async with ConnectionPool.of(settings) as pool:
                app.state.pool = pool
                async with (
                    across_processes(settings.database_url, app.state.signals),
                    anyio.create_task_group() as tg,
                ):
                    app.state.sequencer = Sequencer(app.state.factory)
                    tg.start_soon(kept, "audit sequencer", app.state.sequencer.run)
                    app.state.dispatcher = None
                    if dispatcher:
                        worker = Dispatcher(
                            factory=app.state.factory,
                            pool=pool,
                            # as served: `console serve` fills in the base URL its attestations name
                            settings=app.state.settings,
                            signals=app.state.signals,
                            attester=attester,
                            health=health,
                        )
                        app.state.dispatcher = worker
                        tg.start_soon(kept, "dispatcher", worker.run)
                    if notifier:
                        sender = Notifier(
                            factory=app.state.factory,
                            carriers=carriers_for(app.state.settings),  # as served, like the dispatcher's
                            wait_for_change=app.state.signals.wait_for_change,
                            changed=app.state.signals.something_changed,
                        )
                        tg.start_soon(kept, "notifier", sender.run)
                    async with gateway.running():
                        app.state.ready = True
                        yield
                        app.state.ready = False
                    tg.cancel_scope.cancel()
        finally:
            await engine.dispose()

    app = FastAPI(
        title="Approval console",
        version=__version__,
        lifespan=lifespan,
        openapi_url="/api/v1/openapi.json",
        docs_url=None,  # console/web/api_docs.py serves it with vendored assets
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.attester = attester
    app.state.jwks_body = jwks.key_set_body(attester)
    app.state.gateway = gateway
    app.state.ready = False
    app.state.health = Health()  # of the lifespan's background loops; `serve_app` ends when one ends
    app.state.demo = demo
    app.state.templates = make_templates()
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
    app.state.stopping = Stopping(on_stop=partial(_stop_waiting, app, gateway))
    app.add_middleware(EndedWhenStopping, stopping=app.state.stopping)
    if settings.trusted_proxy_list:
        # Outermost, so everything inside sees the client the trusted proxy names (right-most untrusted
        # X-Forwarded-For address); requests from anyone else keep their own address.
        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.trusted_proxy_list)
    return app
