"""`console policies list|set|remove`: a team's approval policy from the command line."""

from __future__ import annotations

import argparse

from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import SYSTEM
from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.errors import NotFound
from console.identity import team_by_name
from console.mcp.registry import list_servers
from console.policies.rules import ANSWERERS, EXPIRY_ACTIONS
from console.policies.service import RuleView, list_rules, remove_rule, save_rule


def add_policy_commands(sub: Subcommands) -> None:
    policies = sub.add_parser("policies", help="manage a team's approval policy").add_subparsers(
        title="policies commands"
    )
    listing = policies.add_parser("list", help="list a team's policy rules, least specific first")
    listing.add_argument("team")
    listing.set_defaults(handler=_list)

    setting = policies.add_parser(
        "set",
        help="create or replace one rule (options not given inherit from the layer below)",
        description="Without --server, --tool or --destructive the rule is the team default.",
    )
    setting.add_argument("team")
    scope = setting.add_mutually_exclusive_group()
    scope.add_argument(
        "--destructive", action="store_true", help="the stricter default for destructive tools"
    )
    scope.add_argument("--tool", metavar="PATTERN", help="a tool name or glob, e.g. deploy*")
    setting.add_argument(
        "--server", help="the server of a server rule, or the server a tool rule is limited to"
    )
    setting.add_argument(
        "--when",
        metavar="EXPR",
        help="only calls whose arguments meet EXPR, e.g. 'environment == \"production\"' or 'amount > 1000'"
        " (docs/policies.md: Approval gates)",
    )
    _switch(
        setting,
        "gate",
        ("--gate", "tool calls wait for approval before they are sent"),
        ("--no-gate", "no gate"),
    )
    _switch(
        setting,
        "allow_edit",
        ("--allow-edit", "approvers of a gate may change the arguments"),
        ("--no-allow-edit", "the arguments stay as sent"),
    )
    _switch(
        setting,
        "sampling",
        ("--sampling", "people answer the server's sampling requests (they write the model's reply)"),
        ("--no-sampling", "the server is not offered sampling"),
    )
    setting.add_argument("--answerers", choices=ANSWERERS, help="who may answer form questions")
    _switch(
        setting,
        "no_self_approval",
        ("--no-self-approval", "forbid it"),
        ("--allow-self-approval", "allow it"),
    )
    setting.add_argument(
        "--required-approvals", type=int, metavar="N", help="N different people must approve"
    )
    setting.add_argument("--expiry-minutes", type=int, metavar="M", help="a question expires after M minutes")
    setting.add_argument(
        "--expiry-action", choices=EXPIRY_ACTIONS, help="the answer an expired question gets"
    )
    setting.add_argument(
        "--step-up-minutes", type=int, metavar="M", help="accepting needs a sign-in this recent"
    )
    setting.add_argument(
        "--escalate-after", type=int, metavar="M", help="a question unanswered after M minutes is escalated"
    )
    setting.add_argument(
        "--escalate-to",
        metavar="WHO",
        help="whom an escalation emails: role:approver, role:admin, or user names separated by commas",
    )
    setting.set_defaults(handler=_set)

    removing = policies.add_parser("remove", help="remove a rule by its id (its fields inherit again)")
    removing.add_argument("team")
    removing.add_argument("rule_id")
    removing.set_defaults(handler=_remove)


def _switch(parser: argparse.ArgumentParser, dest: str, on: tuple[str, str], off: tuple[str, str]) -> None:
    """A setting switched on or off by one of two flags; neither given inherits it (None)."""
    pair = parser.add_mutually_exclusive_group()
    for (flag, explanation), value in ((on, True), (off, False)):
        pair.add_argument(flag, dest=dest, action="store_const", const=value, help=explanation)


def _list(settings: Settings, args: argparse.Namespace) -> int:
    async def rows(session: AsyncSession) -> list[RuleView]:
        team = await team_by_name(session=session, name=args.team)
        return await list_rules(session=session, team_id=team.id)

    for view in run_with_session(settings, rows):
        values = {k: v for k, v in view.rule.values().items() if v is not None}
        shown = " ".join(f"{k}={v}" for k, v in values.items()) or "(inherits everything)"
        label = view.label if view.when is None else f"{view.label} when {view.when}"
        say(f"{view.rule.id}\t{label}\t{shown}")
    return 0


def _set(settings: Settings, args: argparse.Namespace) -> int:
    scope = (
        "destructive" if args.destructive else "tool" if args.tool else "server" if args.server else "team"
    )

    async def save(session: AsyncSession) -> str:
        team = await team_by_name(session=session, name=args.team)
        server_id = None
        if args.server:
            servers = {s.name: s.id for s in await list_servers(session=session, team_id=team.id)}
            if args.server not in servers:
                raise NotFound(f"no server {args.server!r} in {args.team}")
            server_id = servers[args.server]
        rule = await save_rule(
            session=session,
            actor=SYSTEM,
            team_id=team.id,
            scope=scope,
            server_id=server_id,
            tool_pattern=args.tool,
            condition=args.when,
            values={
                "answerers": args.answerers,
                "no_self_approval": args.no_self_approval,
                "required_approvals": args.required_approvals,
                "expiry_minutes": args.expiry_minutes,
                "expiry_action": args.expiry_action,
                "step_up_minutes": args.step_up_minutes,
                "gate": args.gate,
                "allow_edit": args.allow_edit,
                "sampling": args.sampling,
                "escalate_after_minutes": args.escalate_after,
                "escalate_to": args.escalate_to,
            },
        )
        return rule.id

    rule_id = run_with_session(settings, save)
    say(f"rule {rule_id} saved ({scope})")
    return 0


def _remove(settings: Settings, args: argparse.Namespace) -> int:
    async def remove(session: AsyncSession) -> None:
        team = await team_by_name(session=session, name=args.team)
        await remove_rule(session=session, actor=SYSTEM, team_id=team.id, rule_id=args.rule_id)

    run_with_session(settings, remove)
    say(f"rule {args.rule_id} removed")
    return 0
