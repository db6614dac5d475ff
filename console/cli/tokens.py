"""`console tokens create|list|revoke`: API tokens, whose secret is shown once, at creation."""

from __future__ import annotations

from typing import Any

from console.audit import SYSTEM
from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.identity import create_token
from console.identity.tokens import list_tokens, revoke_token


def add_token_commands(sub: Subcommands) -> None:
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


def _tokens_create(settings: Settings, args: Any) -> int:
    say(
        run_with_session(
            settings,
            lambda s: create_token(session=s, user_name=args.user, team_name=args.team, name=args.name),
        )
    )
    return 0


def _tokens_list(settings: Settings, args: Any) -> int:
    for t in run_with_session(settings, lambda s: list_tokens(session=s, user_name=args.user)):
        state = f"revoked {t.revoked_at:%Y-%m-%d %H:%M}" if t.revoked_at else "active"
        used = f"{t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else "never"
        say(f"{t.id}\t{t.team}\t{t.name}\tcreated {t.created_at:%Y-%m-%d %H:%M}\tlast used {used}\t{state}")
    return 0


def _tokens_revoke(settings: Settings, args: Any) -> int:
    run_with_session(settings, lambda s: revoke_token(session=s, actor=SYSTEM, token_id=args.token_id))
    say(f"token {args.token_id} revoked")
    return 0
