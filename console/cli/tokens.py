"""`console tokens create|list|revoke|webhook-secret`: API tokens, whose secret is shown once, at
creation, with the webhook secret that signs callbacks to their calls (on standard error, so that
`$(console tokens create …)` still holds the token alone)."""

from __future__ import annotations

from typing import Any

from console.audit import SYSTEM
from console.cli.common import Subcommands, complain, run_with_session, say
from console.config import Settings
from console.identity import create_token
from console.identity.tokens import list_tokens, revoke_token, rotate_webhook_secret
from console.mcp.sealed import Outbound


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
    rotate = tokens.add_parser(
        "webhook-secret",
        help="give a token a new webhook secret (signs callbacks to its calls); prints it, once",
    )
    rotate.add_argument("token_id")
    rotate.set_defaults(handler=_rotate)


def _tokens_create(settings: Settings, args: Any) -> int:
    cipher = Outbound.of(settings).cipher
    issued = run_with_session(
        settings,
        lambda s: create_token(
            session=s, user_name=args.user, team_name=args.team, name=args.name, cipher=cipher
        ),
    )
    say(issued.token)
    if issued.webhook_secret is not None:
        complain(f"webhook secret (signs callbacks; shown once): {issued.webhook_secret}")
    return 0


def _rotate(settings: Settings, args: Any) -> int:
    cipher = Outbound.of(settings).cipher
    say(
        run_with_session(
            settings,
            lambda s: rotate_webhook_secret(session=s, actor=SYSTEM, cipher=cipher, token_id=args.token_id),
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
