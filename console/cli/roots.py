"""`console roots show|set|clear`: the roots a team's servers are told of, as the operator."""

from __future__ import annotations

from typing import Any

from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.errors import ConsoleError, InvalidInput
from console.mcp.admin_roots import set_roots, team_roots
from console.mcp.roots import Root, check_root, check_roots


def add_roots_commands(sub: Subcommands) -> None:
    roots = sub.add_parser(
        "roots", help="the file:// roots servers are told of (answered to roots/list without asking anyone)"
    ).add_subparsers(title="roots commands")
    show = roots.add_parser("show", help="the team's default roots and each server's own")
    show.add_argument("team")
    show.set_defaults(handler=_show)
    set_ = roots.add_parser(
        "set",
        help="set the team's default roots, or with --server one server's own (no --root: that server "
        "gets no roots, whatever the default)",
    )
    set_.add_argument("team")
    set_.add_argument(
        "--root",
        dest="roots",
        action="append",
        default=[],
        metavar="ROOT",
        help="'file:///path' or 'file:///path Its name'; repeat for more",
    )
    set_.add_argument("--server", metavar="NAME")
    set_.set_defaults(handler=_set)
    clear = roots.add_parser(
        "clear", help="drop the team's default roots, or with --server a server's own (it takes the default)"
    )
    clear.add_argument("team")
    clear.add_argument("--server", metavar="NAME")
    clear.set_defaults(handler=_clear)


def _show(settings: Settings, args: Any) -> int:
    shown = run_with_session(settings, lambda s: team_roots(session=s, by=None, team_name=args.team))
    say(f"team default: {_listed(shown.default)}")
    for name, own in shown.servers.items():
        say(f"{name}: {'the team default' if own is None else _listed(own)}")
    return 0


def _set(settings: Settings, args: Any) -> int:
    roots = [_root(text) for text in args.roots]
    try:
        check_roots(roots)
    except InvalidInput as exc:
        raise ConsoleError(next(iter(exc.fields.values()), exc.message)) from None
    run_with_session(
        settings,
        lambda s: set_roots(session=s, by=None, team_name=args.team, server_name=args.server, roots=roots),
    )
    say(f"{_whose(args)}: {_listed(roots)}")
    return 0


def _clear(settings: Settings, args: Any) -> int:
    run_with_session(
        settings,
        lambda s: set_roots(session=s, by=None, team_name=args.team, server_name=args.server, roots=None),
    )
    say(f"{_whose(args)}: {'the team default' if args.server else 'none'}")
    return 0


def _root(text: str) -> Root:
    uri, _, name = text.strip().partition(" ")
    try:
        return check_root(uri, name or None)
    except ValueError as exc:
        raise ConsoleError(f"root {text[:100]!r}: {exc}") from None


def _whose(args: Any) -> str:
    return f"roots of server {args.server} in {args.team}" if args.server else f"default roots of {args.team}"


def _listed(roots: tuple[Root, ...] | list[Root]) -> str:
    if not roots:
        return "none"
    return ", ".join(root.uri if root.name is None else f"{root.uri} ({root.name})" for root in roots)
