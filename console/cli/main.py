"""The `console` command: one parser built from each command group's module, and what a run returns."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from sqlalchemy.exc import InterfaceError, OperationalError

from console import __version__
from console.cli import (
    audit,
    backup,
    calling,
    demo,
    notify,
    policies,
    roots,
    serve,
    servers,
    teams,
    testing,
    tokens,
)
from console.cli.common import complain, configure_logging, database_problem, load_settings, use_log_format
from console.errors import ConsoleError


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    configure_logging()
    try:
        settings = load_settings()
    except ConsoleError as exc:
        return _failed(exc)
    use_log_format(settings.log_format)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="console", description="The approval console for MCP elicitations.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(title="commands")
    serve.add_serve_commands(sub)
    teams.add_team_commands(sub)
    tokens.add_token_commands(sub)
    servers.add_server_commands(sub)
    roots.add_roots_commands(sub)
    calling.add_call_commands(sub)
    testing.add_test_commands(sub)
    policies.add_policy_commands(sub)
    audit.add_audit_commands(sub)
    backup.add_backup_commands(sub)
    notify.add_notify_commands(sub)
    demo.add_demo_commands(sub)
    return parser
