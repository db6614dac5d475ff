"""`console demo`: seed a demo team, start a deploy that waits for approval, and serve it all."""

from __future__ import annotations

import secrets
import shutil
import signal
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from sqlalchemy.engine import make_url

from console.audit.signing import new_private_key_text
from console.cli.common import Subcommands, add_bind, bind, complain, run_with_session, say, upgrade_database
from console.cli.serve import serve_app, served_at
from console.config import Settings
from console.db import is_sqlite
from console.demo.kept import KeptServers, port_of
from console.demo.mailbox import kept_messages
from console.demo.seed import new_passwords, question_page, seed_demo
from console.demo.tracker import running_mailbox, running_notes, running_tracker
from console.errors import ConsoleError
from console.files import write_private

DEMO_KEY_FILE = "console-demo.secret"
DEMO_AUDIT_KEY_FILE = "console-demo-audit.key"
DEMO_MAIL_FOLDER = "console-demo-mail"
DEMO_SENDER = "console@demo.invalid"
DEMO_TOKEN_FILE = "console-demo-token"  # noqa: S105  # a file name; it holds dev's agent token
DEMO_SERVERS_FILE = "console-demo-servers.json"  # console/demo/kept.py
DEMO_NOTES_FILE = "console-demo-notes.json"  # what Team notes issued: people's connections survive a restart
# What `--reset` deletes besides the mail folder; the database first (named as the demo's default).
DEMO_FILES = (
    "console.db",
    DEMO_KEY_FILE,
    DEMO_AUDIT_KEY_FILE,
    DEMO_TOKEN_FILE,
    DEMO_SERVERS_FILE,
    DEMO_NOTES_FILE,
)


def add_demo_commands(sub: Subcommands) -> None:
    demo = sub.add_parser("demo", help="seed a demo team, start a deploy that waits for approval, and serve")
    add_bind(demo, default_port=8000)
    demo.add_argument(
        "--reset",
        action="store_true",
        help=f"start afresh: first delete what earlier runs left in this folder ({', '.join(DEMO_FILES)} "
        f"and the mail in {DEMO_MAIL_FOLDER}/)",
    )
    demo.set_defaults(handler=_demo)


def _demo(settings: Settings, args: Any) -> int:
    from console.app import create_app  # slow to import, so only here (see console.cli.serve)
    from console.runtime import runtime_of

    sock = bind(args.host, args.port)
    if args.reset:
        reset_demo(Path.cwd(), settings)
    upgrade_database(settings.database_url)
    updates: dict[str, Any] = {"local_sign_in": True}  # the demo's people are local accounts
    settings = served_at(settings, sock)  # before seeding: the deployer checks the base URL
    if "env" not in settings.model_fields_set:
        updates["env"] = "dev"  # the demo's tracker lives on loopback http
    if settings.secret_key is None:
        complain(f"warning: CONSOLE_SECRET_KEY is not set; the demo uses its own, kept in {DEMO_KEY_FILE}")
        updates["secret_key"] = demo_secret(Path.cwd() / DEMO_KEY_FILE)
    if settings.audit_signing_key is None and settings.audit_signing_key_file is None:
        updates["audit_signing_key_file"] = str(demo_audit_key(Path.cwd() / DEMO_AUDIT_KEY_FILE))
    passwords = new_passwords()
    mail_folder = Path.cwd() / DEMO_MAIL_FOLDER
    kept = KeptServers.read(Path.cwd() / DEMO_SERVERS_FILE)
    with (
        running_tracker(passwords, port=kept.tracker_port, state_key=kept.tracker_key) as tracker,
        running_notes(port=kept.notes_port, state_file=Path.cwd() / DEMO_NOTES_FILE) as notes_url,
        running_mailbox(mail_folder) as mailbox_url,
    ):
        KeptServers(port_of(tracker.mcp_url), port_of(notes_url), kept.tracker_key).write(
            Path.cwd() / DEMO_SERVERS_FILE
        )
        own_mailbox = settings.smtp_url is None  # else email goes where the operator said
        if own_mailbox:
            updates |= {"smtp_url": SecretStr(mailbox_url), "mail_from": DEMO_SENDER}
        settings = settings.model_copy(update=updates)
        mailbox = partial(kept_messages, mail_folder) if own_mailbox else None
        app = create_app(settings, demo=True, demo_mailbox=mailbox)
        runtime = runtime_of(app)
        host, port = sock.getsockname()[:2]
        if host in ("0.0.0.0", "::"):  # noqa: S104  # bound to every address: the deployer asks on loopback
            host = "127.0.0.1"
        jwks_url = f"http://{host}:{port}/.well-known/jwks.json"
        seeded = run_with_session(
            settings,
            lambda s: seed_demo(
                session=s,
                settings=settings,
                passwords=passwords,
                tracker=tracker,
                notes_url=notes_url,
                jwks_url=jwks_url,
                kept_token=kept_token(Path.cwd() / DEMO_TOKEN_FILE),
            ),
        )
        keep_token(Path.cwd() / DEMO_TOKEN_FILE, seeded.dev_token)

        async def announce(url: str) -> None:
            page = await question_page(runtime.factory, runtime.signals, seeded.call_id)
            gate = await question_page(runtime.factory, runtime.signals, seeded.gated_call_id)
            notes = seeded.notes_call_id and await question_page(
                runtime.factory, runtime.signals, seeded.notes_call_id
            )
            for line in seeded.describe(
                url, page, gate, notes or None, mailbox=settings.smtp_url is not None
            ):
                say(line)

        # uvicorn shuts down on SIGTERM and then raises the signal again; with the default handler
        # that would end the process before the tracker is stopped, so it unwinds like Ctrl+C instead.
        signal.signal(signal.SIGTERM, lambda _signum, _frame: signal.raise_signal(signal.SIGINT))
        return serve_app(app, sock, on_ready=announce)


def reset_demo(folder: Path, settings: Settings) -> None:
    """Delete what earlier demos left in `folder`: their database (when it is the SQLite file there), keys,
    token, servers' state and mail.

    Raises:
        ConsoleError: the database is elsewhere (CONSOLE_DATABASE_URL): the demo deletes no other.
    """
    database = sqlite_file(settings.database_url)
    if database is None or database.resolve().parent != folder.resolve():
        raise ConsoleError(
            "console demo --reset deletes only a SQLite database in this folder; CONSOLE_DATABASE_URL "
            "names another database"
        )
    for name in (database.name, f"{database.name}-wal", f"{database.name}-shm", *DEMO_FILES[1:]):
        (folder / name).unlink(missing_ok=True)
    shutil.rmtree(folder / DEMO_MAIL_FOLDER, ignore_errors=True)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL (None for another database, or one in memory)."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    return Path(database) if database and database != ":memory:" else None


def kept_token(path: Path) -> str | None:
    """The demo token the last run kept (whether it still works is the database's to say)."""
    try:
        return path.read_text().strip() or None
    except OSError:
        return None


def keep_token(path: Path, token: str) -> None:
    if kept_token(path) != token:
        path.unlink(missing_ok=True)
        write_private(path, token + "\n")


def demo_secret(path: Path) -> SecretStr:
    """The demo's console secret, kept in a file beside its database so saved credentials stay readable."""
    if not path.exists():
        write_private(path, secrets.token_urlsafe(32))
    return SecretStr(path.read_text().strip())


def demo_audit_key(path: Path) -> Path:
    """The demo's audit signing key, kept beside its database so checkpoints stay verifiable."""
    if not path.exists():
        write_private(path, new_private_key_text() + "\n")
    return path
