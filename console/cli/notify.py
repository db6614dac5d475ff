"""`console notify`: a team's chat and webhook channels."""

from __future__ import annotations

from typing import Any

from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.mcp.sealed import Outbound
from console.notify.channels import EVENTS, add_channel, remove_channel, team_channels


def add_notify_commands(sub: Subcommands) -> None:
    notify = sub.add_parser("notify", help="a team's notification channels").add_subparsers(
        title="notify commands"
    )
    add = notify.add_parser("add", help="send the team's notifications to a chat or a signed webhook")
    add.add_argument("team")
    where = add.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--slack", metavar="URL", help="a Slack-format incoming webhook (Mattermost, Rocket.Chat)"
    )
    where.add_argument("--teams", metavar="URL", help="a Microsoft Teams incoming webhook")
    where.add_argument("--webhook", metavar="URL", help="your endpoint for signed events (Standard Webhooks)")
    add.add_argument(
        "--events",
        metavar="LIST",
        help=f"a webhook's events, comma-separated (default: all of {', '.join(EVENTS)})",
    )
    add.add_argument(
        "--internal",
        action="store_true",
        help="it may be on a loopback, link-local or private address (http too)",
    )
    add.set_defaults(handler=_add)
    listing = notify.add_parser("list", help="list the team's channels")
    listing.add_argument("team")
    listing.set_defaults(handler=_list)
    remove = notify.add_parser("remove", help="remove one of the team's channels")
    remove.add_argument("team")
    remove.add_argument("channel", help="its id, as `console notify list` shows it")
    remove.set_defaults(handler=_remove)


def _add(settings: Settings, args: Any) -> int:
    kind, url = next((k, getattr(args, k)) for k in ("slack", "teams", "webhook") if getattr(args, k))
    events = [e.strip() for e in args.events.split(",") if e.strip()] if args.events else None
    added = run_with_session(
        settings,
        lambda s: add_channel(
            session=s,
            cipher=Outbound.of(settings).cipher,
            by=None,
            team_name=args.team,
            kind=kind,
            url=url,
            events=events,
            internal=args.internal,
        ),
    )
    say(f"{kind} channel {added.channel.id} added to {args.team} ({added.channel.host})")
    if added.secret is not None:
        say(f"signing secret (shown once): {added.secret}")
    return 0


def _list(settings: Settings, args: Any) -> int:
    for channel in run_with_session(
        settings, lambda s: team_channels(session=s, by=None, team_name=args.team)
    ):
        internal = "\tinternal" if channel.internal else ""
        say(f"{channel.id}\t{channel.kind}\t{channel.host}\t{','.join(channel.events)}{internal}")
    return 0


def _remove(settings: Settings, args: Any) -> int:
    run_with_session(
        settings, lambda s: remove_channel(session=s, by=None, team_name=args.team, channel_id=args.channel)
    )
    say(f"channel {args.channel} removed from {args.team}")
    return 0
