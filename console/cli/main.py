"""The `console` command: serve, worker, migrate, demo, and managing teams, users, tokens and servers."""

from __future__ import annotations

import argparse
import secrets
import signal
import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import uvicorn
from pydantic import SecretStr
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from console import migrate
from console.audit import session_info
from console.cli import audit as cli_audit
from console.cli import policies as cli_policies
from console.cli.output import complain, say
from console.cli.startup import bind, configure_logging, database_problem, load_settings
from console.config import Settings
from console.db import create_engine, is_sqlite, session_factory
from console.errors import ConsoleError
from console.files import write_private

T = TypeVar("T")
DEMO_KEY_FILE = "console-demo.secret"
DEMO_AUDIT_KEY_FILE = "console-demo-audit.key"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    configure_logging()
    try:
        settings = load_settings()
    except ConsoleError as exc:
        return _failed(exc)
    try:
        result: int = args.handler(settings, args)
    except KeyboardInterrupt:  # Ctrl+C, once serve and demo have shut down cleanly
        return 130
    except ConsoleError as exc:
        return _failed(exc)
    except (OperationalError, InterfaceError) as exc:
        return _failed(ConsoleError(database_problem(settings.database_url, exc)))
    return result


def _failed(exc: ConsoleError) -> int:
    complain(f"error: {exc.message}")
    for name, problem in getattr(exc, "fields", {}).items():
        complain(f"  {name}: {problem}")
    return 1


def _parser() -> argparse.ArgumentParser:
    from console.cli import admin as cli_admin  # it imports this module's helpers

    parser = argparse.ArgumentParser(prog="console", description="The approval console for MCP elicitations.")
    sub = parser.add_subparsers(title="commands")

    serve = sub.add_parser("serve", help="run the web app and API with an in-process dispatcher")
    _add_bind(serve, default_port=8000)
    serve.add_argument("--no-dispatcher", action="store_true", help="leave sending to `console worker`")
    serve.set_defaults(handler=_serve)

    worker = sub.add_parser("worker", help="run only the dispatcher that sends queued requests")
    worker.set_defaults(handler=_worker)

    sub.add_parser("migrate", help="bring the database schema up to date").set_defaults(handler=_migrate)

    teams = sub.add_parser("teams", help="manage teams").add_subparsers(title="teams commands")
    teams_add = teams.add_parser("add", help="create a team")
    teams_add.add_argument("name")
    teams_add.set_defaults(handler=_teams_add)
    cli_admin.add_team_commands(teams)

    users = sub.add_parser("users", help="manage users").add_subparsers(title="users commands")
    users_add = users.add_parser(
        "add", help="create a user (or update one) with a role in a team, and/or as a site admin"
    )
    users_add.add_argument("name")
    users_add.add_argument("--team", help="give the user a role in this team (with --role)")
    users_add.add_argument("--role", choices=["member", "approver", "admin", "auditor"])
    users_add.add_argument("--password", help="password for signing in to the web console")
    users_add.add_argument(
        "--site-admin", action="store_true", help="may create teams and manage every team on the admin pages"
    )
    users_add.set_defaults(handler=_users_add)
    cli_admin.add_member_commands(sub)

    tokens = sub.add_parser("tokens", help="manage API tokens").add_subparsers(title="tokens commands")
    tokens_create = tokens.add_parser("create", help="create an API token; prints only the token")
    tokens_create.add_argument("user")
    tokens_create.add_argument("--team", required=True)
    tokens_create.add_argument("--name", default="cli")
    tokens_create.set_defaults(handler=_tokens_create)
    tokens_list = tokens.add_parser("list", help="list a user's tokens (never their secrets)")
    tokens_list.add_argument("user")
    tokens_list.set_defaults(handler=_tokens_list)
    tokens_revoke = tokens.add_parser("revoke", help="revoke a token at once, by its id")
    tokens_revoke.add_argument("token_id")
    tokens_revoke.set_defaults(handler=_tokens_revoke)

    servers = sub.add_parser("servers", help="manage MCP servers").add_subparsers(title="servers commands")
    servers_add = servers.add_parser("add", help="register an MCP server (stdio command or HTTP URL)")
    servers_add.add_argument("name")
    servers_add.add_argument("--team", required=True)
    where = servers_add.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", help='program and arguments, e.g. "python -m my_server"')
    where.add_argument("--url", help="Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp")
    servers_add.add_argument("--header", action="append", default=[], metavar="K=V", help="HTTP header")
    servers_add.add_argument("--env", action="append", default=[], metavar="K=V", help="environment (stdio)")
    servers_add.add_argument(
        "--per-user-credential",
        metavar="NAME",
        help="each user's calls carry their own credential, set on the Connections page, as this HTTP header "
        "(Authorization gets 'Bearer <token>') or, for stdio, this environment variable",
    )
    servers_add.add_argument(
        "--internal", action="store_true", help="it may be on a loopback, link-local or private address"
    )
    servers_add.set_defaults(handler=_servers_add)
    servers_list = servers.add_parser("list", help="list registered servers")
    servers_list.set_defaults(handler=_servers_list)
    cli_admin.add_server_commands(servers)

    cli_policies.register(sub)
    cli_audit.register(sub)

    demo = sub.add_parser("demo", help="seed a demo team, start a deploy that waits for approval, and serve")
    _add_bind(demo, default_port=8000)
    demo.set_defaults(handler=_demo)
    return parser


def _add_bind(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port, help="0 picks a free port")


def prepare_database(settings: Settings) -> None:
    """Migrate a fresh SQLite file on first use; other databases are migrated with `console migrate`.

    Raises:
        ConsoleError: a database other than SQLite has no console tables yet.
    """
    if not migrate.needs_schema(settings.database_url):
        return
    if not is_sqlite(settings.database_url):
        raise ConsoleError("the database has no console tables yet: run `console migrate` first")
    migrate.upgrade(settings.database_url)


def warn_without_secret(settings: Settings) -> None:
    if settings.secret_key is None:
        complain(
            "warning: CONSOLE_SECRET_KEY is not set, so secrets for MCP servers (such as each user's own "
            "credentials) cannot be stored or used; set it to 32 or more random characters"
        )


def run_with_session(settings: Settings, action: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async def go() -> T:
        engine = create_engine(settings.database_url)
        try:
            async with session_factory(engine, info=session_info(settings))() as session:
                return await action(session)
        finally:
            await engine.dispose()

    prepare_database(settings)
    return anyio.run(go)


def _pairs(items: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConsoleError(f"expected K=V, got {item!r}")
        pairs[key] = value
    return pairs


def _migrate(settings: Settings, _args: Any) -> int:
    from console.config import secret_text
    from console.identity.credentials import CredentialCipher
    from console.mcp.sealed import seal_plain_values

    migrate.upgrade(settings.database_url)
    cipher = CredentialCipher(secret_text(settings))
    sealed = run_with_session(settings, lambda s: seal_plain_values(session=s, cipher=cipher))
    if sealed:
        say(f"sealed the stored header and environment values of {', '.join(sealed)}")
    say("database is up to date")
    return 0


def _teams_add(settings: Settings, args: Any) -> int:
    from console.identity import create_team

    run_with_session(settings, lambda s: create_team(session=s, name=args.name))
    say(f"team {args.name} created")
    return 0


def _users_add(settings: Settings, args: Any) -> int:
    from console.identity import create_user
    from console.identity.teams import make_site_admin

    if (args.team is None) != (args.role is None) or (args.team is None and not args.site_admin):
        raise ConsoleError("give --team with --role, or --site-admin, or both")
    if args.team is not None:
        run_with_session(
            settings,
            lambda s: create_user(
                session=s, name=args.name, team_name=args.team, role=args.role, password=args.password
            ),
        )
        say(f"{args.name} is {args.role} in {args.team}")
    if args.site_admin:
        password = None if args.team is not None else args.password
        run_with_session(settings, lambda s: make_site_admin(session=s, name=args.name, password=password))
        say(f"{args.name} is a site admin")
    return 0


def _tokens_create(settings: Settings, args: Any) -> int:
    from console.identity import create_token

    say(
        run_with_session(
            settings,
            lambda s: create_token(session=s, user_name=args.user, team_name=args.team, name=args.name),
        )
    )
    return 0


def _tokens_list(settings: Settings, args: Any) -> int:
    from console.identity.tokens import list_tokens

    for t in run_with_session(settings, lambda s: list_tokens(session=s, user_name=args.user)):
        state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "active"
        used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
        say(f"{t.id}\t{t.team}\t{t.name}\tcreated {t.created_at:%Y-%m-%d %H:%M}\tlast used {used}\t{state}")
    return 0


def _tokens_revoke(settings: Settings, args: Any) -> int:
    from console.audit import SYSTEM
    from console.identity.tokens import revoke_token

    run_with_session(settings, lambda s: revoke_token(session=s, actor=SYSTEM, token_id=args.token_id))
    say(f"token {args.token_id} revoked")
    return 0


def _servers_add(settings: Settings, args: Any) -> int:
    from console.mcp.admin import ServerSettings, create_server
    from console.mcp.sealed import Outbound

    server = ServerSettings(
        transport="stdio" if args.command is not None else "http",
        command=args.command or "",
        url=args.url or "",
        env=_pairs(args.env),
        headers=_pairs(args.header),
        credential_name=args.per_user_credential or "",
        internal=args.internal,
    )
    run_with_session(
        settings,
        lambda s: create_server(
            session=s,
            by=None,
            team_name=args.team,
            name=args.name,
            settings=server,
            outbound=Outbound.of(settings),
        ),
    )
    say(f"server {args.name} registered in {args.team}")
    return 0


def _servers_list(settings: Settings, _args: Any) -> int:
    from sqlalchemy import select

    from console.identity.models import Team
    from console.mcp.registry import describe_server, list_servers

    async def rows(session: AsyncSession) -> list[str]:
        teams = {t.id: t.name for t in (await session.execute(select(Team))).scalars()}
        return [
            f"{teams[s.team_id]}\t{s.name}\t{s.transport}\t{describe_server(s)}"
            + ("\tdisabled" if s.disabled else "")
            for s in await list_servers(session=session)
        ]

    for line in run_with_session(settings, rows):
        say(line)
    return 0


def _serve(settings: Settings, args: Any) -> int:
    from console.app import create_app

    sock = bind(args.host, args.port)  # before the database: a port in use changes nothing
    warn_without_secret(settings)
    prepare_database(settings)
    serve_app(create_app(settings, dispatcher=not args.no_dispatcher), sock)
    return 0


def serve_app(
    app: Any, sock: socket.socket, on_ready: Callable[[str], Awaitable[None]] | None = None
) -> None:
    """Serve on the bound socket and print the address once listening."""
    host, bound = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{bound}"
    if "base_url" not in app.state.settings.model_fields_set:
        app.state.settings = app.state.settings.model_copy(update={"base_url": url})
    # uvicorn would believe X-Forwarded-For from loopback; the app believes only CONSOLE_TRUSTED_PROXIES.
    config = uvicorn.Config(app, log_level="warning", lifespan="on", proxy_headers=False)
    server = uvicorn.Server(config)

    async def run() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            while not server.started:  # noqa: ASYNC110  # uvicorn offers a flag, not an event
                await anyio.sleep(0.05)
            say(f"listening on {url}")
            if on_ready is not None:
                await on_ready(url)

    anyio.run(run)


def _worker(settings: Settings, _args: Any) -> int:
    from console.dispatch.signals import Signals
    from console.dispatch.worker import Dispatcher
    from console.mcp.pool import ConnectionPool

    async def work() -> None:
        engine = create_engine(settings.database_url)
        try:
            async with ConnectionPool(request_timeout=settings.request_timeout_seconds) as pool:
                dispatcher = Dispatcher(
                    factory=session_factory(engine, info=session_info(settings)),
                    pool=pool,
                    settings=settings,
                    signals=Signals(),
                )
                say(f"worker {dispatcher.worker_id} started")
                await dispatcher.run()
        finally:
            await engine.dispose()

    warn_without_secret(settings)
    prepare_database(settings)
    anyio.run(work)
    return 0


def _demo(settings: Settings, args: Any) -> int:
    from console.app import create_app
    from console.demo.seed import new_passwords, question_page, seed_demo
    from console.demo.tracker import running_tracker

    sock = bind(args.host, args.port)
    migrate.upgrade(settings.database_url)
    updates: dict[str, Any] = {"local_sign_in": True}  # the demo's people are local accounts
    if "env" not in settings.model_fields_set:
        updates["env"] = "dev"  # the demo's tracker lives on loopback http
    if settings.secret_key is None:
        complain(f"warning: CONSOLE_SECRET_KEY is not set; the demo uses its own, kept in {DEMO_KEY_FILE}")
        updates["secret_key"] = demo_secret(Path.cwd() / DEMO_KEY_FILE)
    if settings.audit_signing_key is None and settings.audit_signing_key_file is None:
        updates["audit_signing_key_file"] = str(demo_audit_key(Path.cwd() / DEMO_AUDIT_KEY_FILE))
    settings = settings.model_copy(update=updates)
    passwords = new_passwords()
    with running_tracker(passwords) as tracker:
        app = create_app(settings, demo=True)
        seeded = run_with_session(
            settings, lambda s: seed_demo(session=s, settings=settings, passwords=passwords, tracker=tracker)
        )

        async def announce(url: str) -> None:
            page = await question_page(app.state.factory, app.state.signals, seeded.call_id)
            for line in seeded.describe(url, page):
                say(line)

        # uvicorn shuts down on SIGTERM and then raises the signal again; with the default handler
        # that would end the process before the tracker is stopped, so it unwinds like Ctrl+C instead.
        signal.signal(signal.SIGTERM, lambda _signum, _frame: signal.raise_signal(signal.SIGINT))
        serve_app(app, sock, on_ready=announce)
    return 0


def demo_secret(path: Path) -> SecretStr:
    """The demo's console secret, kept in a file beside its database so saved credentials stay readable."""
    if not path.exists():
        write_private(path, secrets.token_urlsafe(32))
    return SecretStr(path.read_text().strip())


def demo_audit_key(path: Path) -> Path:
    """The demo's audit signing key, kept beside its database so checkpoints stay verifiable."""
    if not path.exists():
        from console.audit.signing import new_private_key_text

        write_private(path, new_private_key_text() + "\n")
    return path
