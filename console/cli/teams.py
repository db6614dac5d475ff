"""`console teams|users|members`: teams, the people in them and site admins, as the operator (no checks)."""

from __future__ import annotations

from typing import Any

from console.cli.common import Subcommands, run_with_session, say
from console.config import Settings
from console.errors import ConsoleError
from console.identity import create_team, create_user
from console.identity.emails import set_email
from console.identity.models import ROLES
from console.identity.teams import (
    add_member,
    administered_teams,
    change_role,
    make_site_admin,
    remove_member,
    team_members,
)


def add_team_commands(sub: Subcommands) -> None:
    teams = sub.add_parser("teams", help="manage teams").add_subparsers(title="teams commands")
    teams_add = teams.add_parser("add", help="create a team")
    teams_add.add_argument("name")
    teams_add.set_defaults(handler=_teams_add)
    teams_list = teams.add_parser("list", help="list teams with their number of members")
    teams_list.set_defaults(handler=_teams_list)

    users = sub.add_parser("users", help="manage users").add_subparsers(title="users commands")
    users_add = users.add_parser(
        "add", help="create a user (or update one) with a role in a team, and/or as a site admin"
    )
    users_add.add_argument("name")
    users_add.add_argument("--team", help="give the user a role in this team (with --role)")
    users_add.add_argument("--role", choices=["member", "approver", "admin", "auditor"])
    users_add.add_argument("--password", help="password for signing in to the web console")
    users_add.add_argument(
        "--site-admin", action="store_true", help="may create teams and manage every team on the admin pages"
    )
    users_add.add_argument("--email", metavar="ADDR", help="where the user's notifications go")
    users_add.set_defaults(handler=_users_add)
    users_edit = users.add_parser("edit", help="change a user's email address ('' removes it)")
    users_edit.add_argument("name")
    users_edit.add_argument("--email", metavar="ADDR", required=True, help="where notifications go")
    users_edit.set_defaults(handler=_users_edit)

    members = sub.add_parser("members", help="manage team members").add_subparsers(title="members commands")
    add = members.add_parser("add", help="give an existing user a role in a team")
    add.add_argument("team")
    add.add_argument("user")
    add.add_argument("role", choices=ROLES)
    add.set_defaults(handler=_members_add)
    role = members.add_parser("role", help="change a member's role (a team keeps at least one admin)")
    role.add_argument("team")
    role.add_argument("user")
    role.add_argument("role", choices=ROLES)
    role.set_defaults(handler=_members_role)
    listing = members.add_parser("list", help="list a team's members and their roles")
    listing.add_argument("team")
    listing.set_defaults(handler=_members_list)
    remove = members.add_parser("remove", help="take a user out of a team (never its last admin)")
    remove.add_argument("team")
    remove.add_argument("user")
    remove.set_defaults(handler=_members_remove)


def _teams_add(settings: Settings, args: Any) -> int:
    run_with_session(settings, lambda s: create_team(session=s, name=args.name))
    say(f"team {args.name} created")
    return 0


def _teams_list(settings: Settings, _args: Any) -> int:
    for team in run_with_session(settings, lambda s: administered_teams(session=s, by=None)):
        say(f"{team.name}\t{team.members} member{'' if team.members == 1 else 's'}")
    return 0


def _users_add(settings: Settings, args: Any) -> int:
    if (args.team is None) != (args.role is None) or (args.team is None and not args.site_admin):
        raise ConsoleError("give --team with --role, or --site-admin, or both")
    if args.team is not None:
        run_with_session(
            settings,
            lambda s: create_user(
                session=s, name=args.name, team_name=args.team, role=args.role, password=args.password
            ),
        )
        say(f"{args.name} is {args.role} in {args.team}")
    if args.site_admin:
        password = None if args.team is not None else args.password
        run_with_session(settings, lambda s: make_site_admin(session=s, name=args.name, password=password))
        say(f"{args.name} is a site admin")
    if args.email is not None:
        _users_edit(settings, args)
    return 0


def _users_edit(settings: Settings, args: Any) -> int:
    run_with_session(settings, lambda s: set_email(session=s, name=args.name, email=args.email))
    say(f"{args.name}'s email is {args.email}" if args.email else f"{args.name} has no email address now")
    return 0


def _members_add(settings: Settings, args: Any) -> int:
    run_with_session(
        settings,
        lambda s: add_member(session=s, by=None, team_name=args.team, user_name=args.user, role=args.role),
    )
    say(f"{args.user} is {args.role} in {args.team}")
    return 0


def _members_role(settings: Settings, args: Any) -> int:
    run_with_session(
        settings,
        lambda s: change_role(session=s, by=None, team_name=args.team, user_name=args.user, role=args.role),
    )
    say(f"{args.user} is {args.role} in {args.team}")
    return 0


def _members_list(settings: Settings, args: Any) -> int:
    for member in run_with_session(settings, lambda s: team_members(session=s, by=None, team_name=args.team)):
        say(f"{member.name}\t{member.role}")
    return 0


def _members_remove(settings: Settings, args: Any) -> int:
    run_with_session(
        settings, lambda s: remove_member(session=s, by=None, team_name=args.team, user_name=args.user)
    )
    say(f"{args.user} removed from {args.team}")
    return 0
