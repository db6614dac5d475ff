"""What every `console` command shares: how it prints, what it checks before it does anything
(settings, the listening socket, the database), and a database session to act in.

Each problem becomes one `ConsoleError` line for the person at the terminal, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from console import migrate
from console.audit import session_info
from console.config import Settings, get_settings
from console.db import create_engine, is_sqlite, session_factory
from console.errors import ConsoleError
from console.listening import listening_socket
from console.transactions import transaction

T = TypeVar("T")
Subcommands = Any  # argparse's _SubParsersAction, which is private

# Libraries that log each step at INFO (alembic's migrations, every HTTP request of httpx): at a
# terminal they would bury what the command itself prints.
CHATTY_LIBRARIES = ("alembic", "httpx", "httpx2", "mcp")


def say(text: str) -> None:
    print(text, flush=True)  # noqa: T201  # CLI output


def complain(text: str) -> None:
    print(text, file=sys.stderr, flush=True)  # noqa: T201  # CLI output


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)


class JsonLines(logging.Formatter):
    """A log record as one JSON object: time, level, logger, message, and the call's id when the record
    names one (`extra={"call_id": …}`), with the traceback if there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        call_id = getattr(record, "call_id", None)
        if call_id is not None:
            line["call_id"] = call_id
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def use_log_format(log_format: str) -> None:
    """With `json`, every handler of the root logger writes JSON lines (CONSOLE_LOG_FORMAT)."""
    if log_format == "json":
        for handler in logging.getLogger().handlers:
            handler.setFormatter(JsonLines())


def load_settings() -> Settings:
    """The settings from the environment.

    Raises:
        ConsoleError: naming each setting that is wrong, on one line.
    """
    try:
        return get_settings()
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            where = "_".join(str(part) for part in error["loc"]).upper()
            problems.append(f"CONSOLE_{where}: {message}" if where else message)
        raise ConsoleError(f"invalid settings: {'; '.join(problems)}") from None


def add_bind(parser: argparse.ArgumentParser, *, default_port: int) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=default_port, help="0 picks a free port")


def bind(host: str, port: int) -> socket.socket:
    """The socket to serve on, bound before anything else happens.

    Raises:
        ConsoleError: the address is in use or cannot be had.
    """
    try:
        return listening_socket(host, port)
    except OSError as exc:
        raise ConsoleError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def database_problem(url: str, exc: DBAPIError) -> str:
    """One line saying which database failed and how (the password left out)."""
    shown = make_url(url).render_as_string(hide_password=True)
    detail = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
    return f"cannot use the database {shown}: {detail[0] if detail else type(exc).__name__}"


def upgrade_database(url: str) -> list[migrate.Applied]:
    """`migrate.upgrade`, with a migration the database refuses told in one line.

    Raises:
        ConsoleError: a migration failed (the database keeps the revision it had: each upgrade is one
            transaction).
    """
    try:
        return migrate.upgrade(url)
    except DBAPIError as exc:
        failure = database_problem(url, exc).replace("cannot use the database", "cannot migrate the database")
        try:
            kept = migrate.database_revision(url) or "none (no console tables)"
        except DBAPIError:
            kept = "unknown (the database cannot be read now)"
        raise ConsoleError(f"{failure}; its schema revision stays {kept}") from None


def prepare_database(settings: Settings) -> None:
    """Migrate a fresh SQLite file on first use; other databases are migrated with `console migrate`, and
    so is every database whose schema is older than this code.

    Raises:
        ConsoleError: a database other than SQLite has no console tables yet, or the schema is not the one
            this code knows as its newest (older: migrations pending; unknown: a newer console's).
    """
    current = migrate.database_revision(settings.database_url)
    if current is None:
        if not is_sqlite(settings.database_url):
            raise ConsoleError("the database has no console tables yet: run `console migrate` first")
        upgrade_database(settings.database_url)
        return
    pending = migrate.pending_revisions(current)
    if pending is None:
        raise newer_schema(current)
    if pending:
        raise ConsoleError(
            f"the database's schema is at revision {current}, older than this console's "
            f"{migrate.head_revision()} ({len(pending)} migrations pending): run `console migrate` first"
        )


def newer_schema(current: str) -> ConsoleError:
    """The error for a database at a revision this code does not know."""
    return ConsoleError(
        f"the database's schema is at revision {current}, which this console does not know (its newest is "
        f"{migrate.head_revision()}): a newer console migrated it; run that version or a newer one"
    )


def warn_without_secret(settings: Settings) -> None:
    if settings.secret_key is None:
        complain(
            "warning: CONSOLE_SECRET_KEY is not set, so secrets for MCP servers (such as each user's own "
            "credentials) cannot be stored or used; set it to 32 or more random characters"
        )


def run_with_session(settings: Settings, action: Callable[[AsyncSession], Awaitable[T]]) -> T:
    """Run `action` as one unit of work: it commits when the action returns (the command is the entry
    point)."""

    async def go() -> T:
        engine = create_engine(settings.database_url)
        try:
            async with transaction(session_factory(engine, info=session_info(settings))) as session:
                return await action(session)
        finally:
            await engine.dispose()

    prepare_database(settings)
    return anyio.run(go)


def pairs(items: list[str]) -> dict[str, str]:
    """`K=V` arguments (of --header, --env) as a dict.

    Raises:
        ConsoleError: an item has no `=` or no key.
    """
    found: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConsoleError(f"expected K=V, got {item!r}")
        found[key] = value
    return found
