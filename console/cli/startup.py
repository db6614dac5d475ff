"""What `console` checks before it does anything: settings, the listening socket, the database.

Each problem becomes one `ConsoleError` line for the person at the terminal, never a traceback.
"""

from __future__ import annotations

import logging
import socket

from pydantic import ValidationError
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from console.config import Settings, get_settings
from console.errors import ConsoleError
from console.listening import listening_socket

# Libraries that log each step at INFO (alembic's migrations, every HTTP request of httpx): at a
# terminal they would bury what the command itself prints.
CHATTY_LIBRARIES = ("alembic", "httpx", "httpx2", "mcp")


def configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for name in CHATTY_LIBRARIES:
        logging.getLogger(name).setLevel(logging.WARNING)


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
