"""`console serve|worker|migrate`: the web app and API, the dispatcher on its own, and the schema."""

from __future__ import annotations

import argparse
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from contextlib import suppress
from functools import partial
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import uvicorn

from console import migrate
from console.audit import Sequencer, session_info
from console.background import Health, keep_going
from console.cli.common import (
    Subcommands,
    add_bind,
    bind,
    newer_schema,
    prepare_database,
    run_with_session,
    say,
    upgrade_database,
    warn_without_secret,
)
from console.cli.connection_room import warn_if_short_of_connections
from console.cli.supervise import serve_in_processes
from console.config import Settings, secret_text
from console.db import create_engine, is_sqlite, session_factory
from console.dispatch.signals import Signals
from console.dispatch.wakeups import across_processes
from console.identity.credentials import CredentialCipher
from console.mcp.pool import ConnectionPool
from console.mcp.sealed import seal_plain_values

STOP_GRACE_SECONDS = 1.0  # what the requests open as the server stops have to end by themselves
SIGN_IN_SECONDS = 30.0  # how long the sign-in page may take to answer once the server started


def add_serve_commands(sub: Subcommands) -> None:
    serve = sub.add_parser("serve", help="run the web app and API with an in-process dispatcher")
    add_bind(serve, default_port=8000)
    serve.add_argument("--no-dispatcher", action="store_true", help="leave sending to `console worker`")
    serve.add_argument(
        "--workers",
        type=_count,
        metavar="N",
        help="serve from N processes, each with its own dispatcher (default: one per CPU on PostgreSQL, "
        "1 on SQLite)",
    )
    # How `--workers` starts each of its processes: the socket to serve and a pipe to say it serves.
    serve.add_argument("--socket-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)
    serve.set_defaults(handler=_serve)

    worker = sub.add_parser("worker", help="run only the dispatcher that sends queued requests")
    worker.set_defaults(handler=_worker)

    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(handler=_migrate)


def _migrate(settings: Settings, _args: Any) -> int:
    current = migrate.database_revision(settings.database_url)
    if current is not None and migrate.pending_revisions(current) is None:
        raise newer_schema(current)
    applied = upgrade_database(settings.database_url)
    for step in applied:
        say(str(step))
    cipher = CredentialCipher(secret_text(settings))
    sealed = run_with_session(settings, lambda s: seal_plain_values(session=s, cipher=cipher))
    if sealed:
        say(f"sealed the stored header and environment values of {', '.join(sealed)}")
    say(f"database upgraded to {migrate.head_revision()}" if applied else "database is up to date")
    return 0


def _serve(settings: Settings, args: Any) -> int:
    # The web app (and, in `_worker`, the dispatcher) is imported only by the commands that run it:
    # importing it takes longer than everything else `console` loads, and every command would wait.
    from console.app import create_app

    if args.socket_fd is not None:  # one of `--workers`'s processes: the first one checked the database
        sock = socket.socket(fileno=args.socket_fd)
        app = create_app(served_at(settings, sock), dispatcher=not args.no_dispatcher)
        return serve_app(app, sock, _tell_ready(args.ready_fd), announce=False)
    sock = bind(args.host, args.port)  # before the database: a port in use changes nothing
    settings = served_at(settings, sock)
    warn_without_secret(settings)
    prepare_database(settings)
    workers = args.workers or (1 if is_sqlite(settings.database_url) else os.cpu_count() or 1)
    warn_if_short_of_connections(settings, workers)
    if workers > 1:
        return serve_in_processes(sock, workers, ["--no-dispatcher"] * args.no_dispatcher, address_of(sock))
    return serve_app(create_app(settings, dispatcher=not args.no_dispatcher), sock)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("a whole number of at least 1")
    return int(text)


def _tell_ready(fd: int | None) -> Callable[[str], Awaitable[None]] | None:
    if fd is None:
        return None

    async def ready(_url: str) -> None:
        with suppress(OSError):
            os.write(fd, b"1")
        os.close(fd)

    return ready


def served_at(settings: Settings, sock: socket.socket) -> Settings:
    """`settings` with the address `sock` listens on as the base URL, unless CONSOLE_BASE_URL says
    otherwise: every link and email then names the console where it can be reached."""
    if "base_url" in settings.model_fields_set:
        return settings
    return settings.model_copy(update={"base_url": address_of(sock)})


def address_of(sock: socket.socket) -> str:
    host, bound = sock.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{bound}"


def serve_app(
    app: Any,
    sock: socket.socket,
    on_ready: Callable[[str], Awaitable[None]] | None = None,
    *,
    announce: bool = True,
) -> int:
    """Serve on the bound socket and, with `announce`, print the address once listening; the exit code:
    1 when a background loop of the app could not go on (console/background.py), which stops serving
    too, so that a supervisor starts another process; 0 when stopped."""
    from console.runtime import runtime_of  # with the app it serves (see `_serve`)

    url = address_of(sock)
    runtime = runtime_of(app)  # made with the settings `served_at` gave, by each caller
    # uvicorn would believe X-Forwarded-For from loopback; the app believes only CONSOLE_TRUSTED_PROXIES.
    # In JSON, uvicorn's own lines go through the root logger's handlers like every other.
    plain = runtime.settings.log_format == "text"
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        proxy_headers=False,
        log_config=uvicorn.config.LOGGING_CONFIG if plain else None,
    )
    server = _Server(config)

    async def serve_until_stopped(stopped: anyio.CancelScope) -> None:
        await server.serve([sock])
        stopped.cancel()  # the wait for a background loop's end below

    async def end_open_requests_once_stopping() -> None:
        # uvicorn waits for every open connection before it stops the app: a live inbox or an agent's
        # held request would keep it waiting (for ever), so those end as soon as it begins to stop.
        while not server.should_exit:  # noqa: ASYNC110  # uvicorn offers a flag, not an event
            await anyio.sleep(0.05)
        await runtime.life.stopping.stop_after(STOP_GRACE_SECONDS)

    async def ready(then: Callable[[str], Awaitable[None]]) -> None:
        await then(url)

    unanswered: list[str] = []

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(serve_until_stopped, tg.cancel_scope)
            tg.start_soon(end_open_requests_once_stopping)
            while not server.started:  # noqa: ASYNC110  # uvicorn offers a flag, not an event
                await anyio.sleep(0.05)
            if not await _sign_in_answers(url):
                unanswered.append(f"stopped: the sign-in page at {url}/login did not answer in time")
                server.should_exit = True
                return
            if announce:
                say(f"listening on {url}")
            if on_ready is not None:  # beside the wait: a loop that ends meanwhile still stops the server
                tg.start_soon(ready, on_ready)
            await health.ended.wait()
            server.should_exit = True

    health = runtime.life.health
    anyio.run(run)
    if signal.SIGINT in server.signalled:
        # uvicorn raises the signal again once it stopped, and asyncio's handler turns it into a
        # KeyboardInterrupt only when the cancellation it makes reaches the end: sometimes it is absorbed.
        raise KeyboardInterrupt
    if health.ended_because is not None:
        say(f"stopped: {health.ended_because}")
        return 1
    if unanswered:
        say(unanswered[0])
        return 1
    return 0 if server.started else 1  # not started: the app's startup failed, and uvicorn said why


async def _sign_in_answers(url: str) -> bool:
    """Whether the sign-in page answers on the served address (asked on loopback when every address is
    bound): "listening" is said only once a person could sign in."""
    parts = urlsplit(url)
    if parts.hostname in ("0.0.0.0", "::"):  # noqa: S104  # every address: loopback is one of them
        loopback = "[::1]" if parts.hostname == "::" else "127.0.0.1"
        url = parts._replace(netloc=f"{loopback}:{parts.port}").geturl()
    with anyio.move_on_after(SIGN_IN_SECONDS):
        async with httpx2.AsyncClient(timeout=SIGN_IN_SECONDS) as client:
            while True:
                with suppress(httpx2.HTTPError):
                    if (await client.get(f"{url}/login")).status_code == 200:
                        return True
                await anyio.sleep(0.05)  # the app is starting: it answers in a moment
    return False


class _Server(uvicorn.Server):
    """uvicorn's server, remembering the signals that stopped it."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.signalled: list[int] = []

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self.signalled.append(sig)
        super().handle_exit(sig, frame)


def _worker(settings: Settings, _args: Any) -> int:
    from console.calls.restored import hold_if_restored
    from console.dispatch.worker import Dispatcher
    from console.identity.attester import attester_from

    attester = attester_from(settings)  # before anything starts: an unreadable key is one line

    async def work() -> None:
        engine = create_engine(settings.database_url, pool_size=settings.database_pool_size)
        try:
            factory = session_factory(engine, info=session_info(settings))
            await hold_if_restored(factory, settings)  # before anything is sent
            signals = Signals()
            async with (
                ConnectionPool.of(settings) as pool,
                across_processes(settings.database_url, signals),
                anyio.create_task_group() as tg,
            ):
                health = Health()
                dispatcher = Dispatcher(
                    factory=factory,
                    pool=pool,
                    settings=settings,
                    signals=signals,
                    attester=attester,
                    health=health,
                )
                tg.start_soon(
                    partial(keep_going, health=health, factory=factory),
                    "audit sequencer",
                    Sequencer(factory).run,
                )
                say(f"worker {dispatcher.worker_id} started")
                await dispatcher.run()
        finally:
            await engine.dispose()

    warn_without_secret(settings)
    prepare_database(settings)
    warn_if_short_of_connections(settings, 1)
    anyio.run(work)
    return 0
