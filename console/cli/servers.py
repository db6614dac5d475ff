"""`console servers add|list|edit|disable|enable|test`: a team's MCP servers, as the operator (no checks)."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.pin_advice import with_pin_advice
from console.cli.common import Subcommands, complain, pairs, run_with_session, say
from console.config import Settings
from console.errors import InvalidInput
from console.identity.models import Team
from console.mcp.admin import (
    OAUTH_CLIENT_VALUES,
    Edited,
    ServerSettings,
    create_server,
    edit_server,
    server_for_admin,
    set_disabled,
    settings_of,
)
from console.mcp.models import McpServer
from console.mcp.names import server_name_problem
from console.mcp.probe import ProbeOutcome, probe_server
from console.mcp.registry import describe_server, list_servers
from console.mcp.sealed import Outbound
from console.transactions import commit

OAUTH_HELP = (
    "each user connects their own account at the server's authorization server (MCP authorization, "
    "OAuth 2.1) on the Connections page; their calls carry their own token (HTTP servers)"
)
OAUTH_TEAM_HELP = (
    "every call carries one team account's OAuth token, which the console gets with the client credentials "
    "of --oauth-client-id (its secret, or a private key for JWT assertions), or with the workload identity "
    "token of --oauth-workload-token-file"
)
MAX_KEY_CHARS = 8192
PROTOCOL_HELP = (
    "the one MCP version the console speaks to the server: 2025-11-25 (for a server that pushes questions "
    "only on the older protocol), 2026-07-28, or newest (the newest both speak; the default)"
)
HOLD_HELP = (
    "how long the server (MCP 2025-11-25) waits for an answer to a question it pushes mid-call, in "
    "seconds: its held questions expire sooner"
)


def add_server_commands(sub: Subcommands) -> None:
    servers = sub.add_parser("servers", help="manage MCP servers").add_subparsers(title="servers commands")
    servers_add = servers.add_parser("add", help="register an MCP server (stdio command or HTTP URL)")
    servers_add.add_argument("name")
    servers_add.add_argument("--team", required=True)
    where = servers_add.add_mutually_exclusive_group(required=True)
    where.add_argument("--command", help='program and arguments, e.g. "python -m my_server"')
    where.add_argument("--url", help="Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp")
    servers_add.add_argument("--header", action="append", default=[], metavar="K=V", help="HTTP header")
    servers_add.add_argument("--env", action="append", default=[], metavar="K=V", help="environment (stdio)")
    per_user = servers_add.add_mutually_exclusive_group()
    per_user.add_argument(
        "--per-user-credential",
        metavar="NAME",
        help="each user's calls carry their own credential, set on the Connections page, as this HTTP header "
        "(Authorization gets 'Bearer <token>') or, for stdio, this environment variable",
    )
    per_user.add_argument("--oauth", action="store_true", help=OAUTH_HELP)
    per_user.add_argument("--oauth-team", action="store_true", help=OAUTH_TEAM_HELP)
    _oauth_client_arguments(servers_add)
    servers_add.add_argument(
        "--internal", action="store_true", help="it may be on a loopback, link-local or private address"
    )
    servers_add.add_argument("--hold-seconds", metavar="N", default="", help=HOLD_HELP)
    servers_add.add_argument("--protocol-version", metavar="VERSION", default="newest", help=PROTOCOL_HELP)
    servers_add.set_defaults(handler=_servers_add)
    servers_list = servers.add_parser("list", help="list registered servers")
    servers_list.set_defaults(handler=_servers_list)

    edit = servers.add_parser("edit", help="change a server's settings; what you leave out stays as it is")
    _team_and_name(edit)
    where = edit.add_mutually_exclusive_group()
    where.add_argument("--command", help="switch to (or change) a stdio server: program and arguments")
    where.add_argument("--url", help="switch to (or change) a Streamable HTTP server")
    edit.add_argument("--header", action="append", default=[], metavar="K=V", help="set an HTTP header")
    edit.add_argument("--remove-header", action="append", default=[], metavar="K", help="drop a header")
    edit.add_argument("--env", action="append", default=[], metavar="K=V", help="set an environment variable")
    edit.add_argument("--remove-env", action="append", default=[], metavar="K", help="drop a variable")
    credential = edit.add_mutually_exclusive_group()
    credential.add_argument(
        "--per-user-credential", metavar="NAME", help="header or variable for each user's own"
    )
    credential.add_argument("--oauth", action="store_true", help=OAUTH_HELP)
    credential.add_argument("--oauth-team", action="store_true", help=OAUTH_TEAM_HELP)
    credential.add_argument("--shared", action="store_true", help="stop sending per-user credentials")
    _oauth_client_arguments(edit)
    edit.add_argument(
        "--trusted", action=argparse.BooleanOptionalAction, help="policies may rely on annotations"
    )
    edit.add_argument(
        "--idempotent",
        action=argparse.BooleanOptionalAction,
        help="send a request whose outcome was lost again automatically (never one people decided)",
    )
    edit.add_argument(
        "--internal",
        action=argparse.BooleanOptionalAction,
        help="the server may be on a loopback, link-local or private address",
    )
    edit.add_argument("--hold-seconds", metavar="N", help=f"{HOLD_HELP} ('' : not known)")
    edit.add_argument("--protocol-version", metavar="VERSION", help=PROTOCOL_HELP)
    edit.set_defaults(handler=_servers_edit)
    for verb, disabled in (("disable", True), ("enable", False)):
        toggle = servers.add_parser(
            verb, help=f"{verb} a server ({'new calls are refused' if disabled else 'again'})"
        )
        _team_and_name(toggle)
        toggle.set_defaults(handler=_servers_toggle, disabled=disabled)
    test = servers.add_parser("test", help="connect afresh and list the tools with their annotations")
    _team_and_name(test)
    test.set_defaults(handler=_servers_test)


def _oauth_client_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--oauth-client-id",
        metavar="ID",
        help="the client id you registered for the console at the server's authorization server "
        "(empty: none; the console then uses its metadata document or registers itself)",
    )
    parser.add_argument(
        "--oauth-client-secret-env",
        metavar="VAR",
        help="the environment variable that holds that client's secret (kept off the command line)",
    )
    parser.add_argument(
        "--oauth-client-key-file",
        metavar="PATH",
        type=Path,
        help="a team account's client signs JWT assertions with this private key (PEM: EC, RSA or Ed25519)",
    )
    parser.add_argument(
        "--oauth-workload-token-file",
        metavar="PATH",
        help="a team account presents the identity token the platform keeps in this file (a JWT, read at "
        "each token request: workload identity federation, RFC 7523 JWT bearer); an empty value removes it",
    )
    parser.add_argument(
        "--oauth-resource-indicator",
        choices=("auto", "send", "omit"),
        help="whether OAuth requests name the server in `resource` (RFC 8707): omit it for an authorization "
        "server that refuses it (Microsoft Entra ID, error AADSTS9010010); auto, the default, omits it for "
        "Entra ID's v2.0 endpoints only",
    )
    parser.add_argument(
        "--oauth-scope-prefix",
        metavar="URI",
        help="the Application ID URI (e.g. api://<application id>) that qualifies the scopes asked for when "
        "`resource` is omitted: notes.read becomes <URI>/notes.read, no scope <URI>/.default (empty: none)",
    )
    parser.add_argument(
        "--oauth-enterprise",
        action=argparse.BooleanOptionalAction,
        help="with --oauth: each person's grant comes from enterprise-managed authorization, their single "
        "sign-on ID token exchanged at the identity provider and presented by the client of "
        "--oauth-client-id with its secret (no consent page)",
    )


def _oauth_client(args: Any) -> dict[str, Any]:
    """The OAuth client settings the arguments give (none given: none changed)."""
    changes: dict[str, Any] = {}
    if args.oauth_client_id is not None:
        changes["oauth_client_id"] = args.oauth_client_id
    if args.oauth_client_secret_env is not None:
        secret = os.environ.get(args.oauth_client_secret_env)
        if not secret:
            raise InvalidInput(
                "no client secret", {"oauth_client_secret": f"{args.oauth_client_secret_env} is not set"}
            )
        changes["oauth_client_secret"] = secret
    if args.oauth_enterprise is not None:
        changes["oauth_enterprise"] = args.oauth_enterprise
    if args.oauth_resource_indicator is not None:
        changes["oauth_resource_indicator"] = args.oauth_resource_indicator
    if args.oauth_scope_prefix is not None:
        changes["oauth_scope_prefix"] = args.oauth_scope_prefix
    if args.oauth_workload_token_file is not None:
        path = args.oauth_workload_token_file
        changes["oauth_workload_token_file"] = str(Path(path).absolute()) if path else ""
    if args.oauth_client_key_file is not None:
        try:
            changes["oauth_client_key"] = args.oauth_client_key_file.read_text()[:MAX_KEY_CHARS]
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput(
                "cannot read the key file", {"oauth_client_key": f"{args.oauth_client_key_file}: {exc}"}
            ) from None
    return changes


def _team_and_name(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("team")
    parser.add_argument("name", help="the server's name in the team")


def printable(text: str) -> str:
    """Server-supplied text made safe for a terminal: control characters shown as escapes."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _servers_add(settings: Settings, args: Any) -> int:
    server = ServerSettings(
        transport="stdio" if args.command is not None else "http",
        command=args.command or "",
        url=args.url or "",
        env=pairs(args.env),
        headers=pairs(args.header),
        credential_name=args.per_user_credential or "",
        oauth=args.oauth or args.oauth_team,
        oauth_team=args.oauth_team,
        internal=args.internal,
        hold_seconds=args.hold_seconds,
        protocol_version=_pin(args.protocol_version),
        **_oauth_client(args),
    )
    run_with_session(
        settings,
        lambda s: create_server(
            session=s,
            by=None,
            team_name=args.team,
            name=args.name,
            settings=server,
            outbound=Outbound.of(settings),
        ),
    )
    say(f"server {args.name} registered in {args.team}")
    return 0


def _pin(version: str) -> str:
    return "" if version == "newest" else version


def _servers_list(settings: Settings, _args: Any) -> int:
    async def rows(session: AsyncSession) -> list[str]:
        teams = {t.id: t.name for t in (await session.execute(select(Team))).scalars()}
        return [
            f"{teams[s.team_id]}\t{s.name}\t{s.transport}\t{describe_server(s)}"
            + (f"\tpinned to MCP {s.pinned_protocol}" if s.pinned_protocol else "")
            + ("\tdisabled" if s.disabled else "")
            + _ambiguous(s.name)
            for s in await list_servers(session=session)
        ]

    for line in run_with_session(settings, rows):
        say(line)
    return 0


def _ambiguous(name: str) -> str:
    """What `servers list` says of a name, registered before such names were refused, that could make
    names at the gateway's /mcp ambiguous."""
    problem = server_name_problem(name)
    if problem is None:
        return ""
    return (
        f"\tname may make names at /mcp ambiguous ({problem}); such names are withheld there: "
        "add the server again under another name"
    )


def _servers_edit(settings: Settings, args: Any) -> int:

    async def edit(session: AsyncSession) -> Edited:
        server = await server_for_admin(session=session, by=None, team_name=args.team, name=args.name)
        current = settings_of(server)
        env = {**current.env, **pairs(args.env)}
        headers = {**current.headers, **pairs(args.header)}
        changes: dict[str, Any] = {
            "env": {k: v for k, v in env.items() if k not in args.remove_env},
            "headers": {k: v for k, v in headers.items() if k not in args.remove_header},
        }
        if args.command is not None:
            changes.update(transport="stdio", command=args.command)
        if args.url is not None:
            changes.update(transport="http", url=args.url)
        if args.per_user_credential is not None or args.shared or args.oauth or args.oauth_team:
            changes["credential_name"] = args.per_user_credential or ""
            changes["oauth"] = args.oauth or args.oauth_team
            changes["oauth_team"] = args.oauth_team
        changes.update(_oauth_client(args))
        if args.hold_seconds is not None:
            changes["hold_seconds"] = args.hold_seconds
        if args.protocol_version is not None:
            changes["protocol_version"] = _pin(args.protocol_version)
        for flag in ("trusted", "idempotent", "internal"):
            if getattr(args, flag) is not None:
                changes[flag] = getattr(args, flag)
        return await edit_server(
            session=session,
            by=None,
            team_name=args.team,
            name=args.name,
            settings=replace(current, **changes),
            outbound=Outbound.of(settings),
        )

    edited = run_with_session(settings, edit)
    say(f"server {args.name} in {args.team} saved")
    if edited.dropped:
        oauth = set(edited.dropped) & set(OAUTH_CLIENT_VALUES)
        options = "--header, --env or the --oauth-client-… options" if oauth else "--header or --env"
        say(
            f"it points elsewhere now, so the stored values of {', '.join(sorted(edited.dropped))} were "
            f"dropped: give them again with {options}"
        )
    if edited.credentials_dropped:
        count = edited.credentials_dropped
        say(f"{count} people's own credentials for it were deleted: they must connect again")
    return 0


def _servers_toggle(settings: Settings, args: Any) -> int:

    run_with_session(
        settings,
        lambda s: set_disabled(
            session=s, by=None, team_name=args.team, name=args.name, disabled=args.disabled
        ),
    )
    say(f"server {args.name} in {args.team} {'disabled' if args.disabled else 'enabled'}")
    return 0


def _servers_test(settings: Settings, args: Any) -> int:

    async def tested(session: AsyncSession) -> tuple[McpServer, ProbeOutcome]:
        server = await server_for_admin(session=session, by=None, team_name=args.team, name=args.name)
        await commit(session)  # no transaction stays open while the server is reached
        server, outcome = await probe_server(
            session=session, by=None, team_name=args.team, server=server, outbound=Outbound.of(settings)
        )
        await commit(session)
        advised = await with_pin_advice(
            session=session,
            server=server,
            team_name=args.team,
            outcome=outcome,
            outbound=Outbound.of(settings),
        )
        return server, advised

    server, outcome = run_with_session(settings, tested)
    for note in outcome.notes:
        say(f"note: {printable(note)}")
    if not outcome.ok:
        complain(f"error: {printable(outcome.error or 'connection failed')}")
        return 1
    tools = f"{len(outcome.tools)} tool{'' if len(outcome.tools) == 1 else 's'}"
    say(f"ok: {server.name} answered in {outcome.seconds:.1f} s and lists {tools}")
    if outcome.tools and not server.trusted:
        say("the server is not trusted: policies ignore its annotations")
    for tool in outcome.tools:
        hints = {
            "readOnly": tool.read_only,
            "destructive": tool.destructive,
            "idempotent": tool.idempotent,
            "openWorld": tool.open_world,
        }
        shown = " ".join(f"{k}={'-' if v is None else str(v).lower()}" for k, v in hints.items())
        say(f"{printable(tool.name)}\t{printable(tool.title or '-')}\t{shown}")
    return 0
