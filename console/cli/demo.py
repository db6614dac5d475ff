"""`console demo`: seed a demo team, start a deploy that waits for approval, and serve it all."""

from __future__ import annotations

import secrets
import signal
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from console import migrate
from console.audit.signing import new_private_key_text
from console.cli.common import Subcommands, add_bind, bind, complain, run_with_session, say
from console.cli.serve import address_of, serve_app
from console.config import Settings
from console.demo.mailbox import kept_messages
from console.demo.seed import new_passwords, question_page, seed_demo
from console.demo.tracker import running_mailbox, running_notes, running_tracker
from console.files import write_private

DEMO_KEY_FILE = "console-demo.secret"
DEMO_AUDIT_KEY_FILE = "console-demo-audit.key"
DEMO_MAIL_FOLDER = "console-demo-mail"
DEMO_SENDER = "console@demo.invalid"


def add_demo_commands(sub: Subcommands) -> None:
    demo = sub.add_parser("demo", help="seed a demo team, start a deploy that waits for approval, and serve")
    add_bind(demo, default_port=8000)
    demo.set_defaults(handler=_demo)


def _demo(settings: Settings, args: Any) -> int:
    from console.app import create_app  # slow to import, so only here (see console.cli.serve)

    sock = bind(args.host, args.port)
    migrate.upgrade(settings.database_url)
    updates: dict[str, Any] = {"local_sign_in": True}  # the demo's people are local accounts
    if "base_url" not in settings.model_fields_set:  # as `serve_app` fills it in: the deployer checks it
        updates["base_url"] = address_of(sock)
    if "env" not in settings.model_fields_set:
        updates["env"] = "dev"  # the demo's tracker lives on loopback http
    if settings.secret_key is None:
        complain(f"warning: CONSOLE_SECRET_KEY is not set; the demo uses its own, kept in {DEMO_KEY_FILE}")
        updates["secret_key"] = demo_secret(Path.cwd() / DEMO_KEY_FILE)
    if settings.audit_signing_key is None and settings.audit_signing_key_file is None:
        updates["audit_signing_key_file"] = str(demo_audit_key(Path.cwd() / DEMO_AUDIT_KEY_FILE))
    passwords = new_passwords()
    mail_folder = Path.cwd() / DEMO_MAIL_FOLDER
    with (
        running_tracker(passwords) as tracker,
        running_notes() as notes_url,
        running_mailbox(mail_folder) as mailbox_url,
    ):
        own_mailbox = settings.smtp_url is None  # else email goes where the operator said
        if own_mailbox:
            updates |= {"smtp_url": SecretStr(mailbox_url), "mail_from": DEMO_SENDER}
        settings = settings.model_copy(update=updates)
        app = create_app(settings, demo=True)
        if own_mailbox:
            app.state.demo_mailbox = partial(kept_messages, mail_folder)
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
            ),
        )

        async def announce(url: str) -> None:
            page = await question_page(app.state.factory, app.state.signals, seeded.call_id)
            gate = await question_page(app.state.factory, app.state.signals, seeded.gated_call_id)
            notes = seeded.notes_call_id and await question_page(
                app.state.factory, app.state.signals, seeded.notes_call_id
            )
            for line in seeded.describe(
                url, page, gate, notes or None, mailbox=settings.smtp_url is not None
            ):
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
        write_private(path, new_private_key_text() + "\n")
    return path
