"""Team admins manage their MCP servers: add, edit, disable and enable, with every change audited.

`by` is the person acting; `None` is the operator (the CLI, the demo's seed), who may do anything a site
admin may. Whatever names something on the console's host is theirs alone (console/identity/host_settings.py):
a stdio server (a program, its environment), marking a server internal (allowed on loopback and private
addresses) and where an internal server points, a URL on such an address, and a team account's workload
identity token file. Team admins add and change HTTP servers on public addresses, and enable or disable
any server of their team.

Header and environment values, and a hand-registered OAuth client's secret and key, may be credentials:
they are stored sealed, sent to the server, and never handed back. `ServerSettings` read from a server
carries header and environment names with `None` values; `None` in an edit keeps the value already
stored, unless the edit changes where the server points: then only the values entered again are kept
(the OAuth client's secret, key and workload identity token file too, and the team account's token).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from joserfc.errors import JoseError
from joserfc.jwk import ECKey, OKPKey, RSAKey
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import record_event
from console.db import flush_unique, new_id
from console.errors import InvalidInput, NotFound
from console.identity.credentials import SecretMissing, forget_server_credentials
from console.identity.host_settings import only_site_admin
from console.identity.models import Team
from console.identity.teams import MemberRow, actor_of, check_name, members_of, require_team_admin
from console.identity.viewer import Viewer
from console.mcp.addresses import url_refusal
from console.mcp.endpoint import PROTOCOL_PINS
from console.mcp.models import McpServer
from console.mcp.names import server_name_problem
from console.mcp.registry import describe_server
from console.mcp.sealed import (
    NO_KEY,
    OAuthClientEntry,
    Outbound,
    open_oauth_client,
    seal_oauth_client,
    seal_value,
    stored_map,
)

HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}")
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
MAX_VALUE = 8192
MAX_CLIENT_ID = 500
MAX_PATH = 1000
MAX_HOLD_SECONDS = 7 * 24 * 3600
MAX_SCOPE_PREFIX = 500
RESOURCE_MODES = ("send", "omit")
RESERVED_NAMES = ("new",)  # /servers/new is the form for adding one
# What a move drops of a hand-registered OAuth client unless entered again, as the page names them.
OAUTH_CLIENT_VALUES = ("OAuth client secret", "OAuth client key", "workload identity token file")


@dataclass(frozen=True)
class ServerSettings:
    """What an admin sets on a server; secret values are `None` when read back."""

    transport: str = "stdio"
    command: str = ""
    url: str = ""
    env: Mapping[str, str | None] = field(default_factory=dict)
    headers: Mapping[str, str | None] = field(default_factory=dict)
    credential_name: str = ""  # empty: shared settings; else each user's own credential under this name
    oauth: bool = False  # each user connects their own account (MCP authorization); HTTP only
    # An OAuth client an admin registered at the server's authorization server ("": none, the console
    # registers itself); a secret of None keeps the stored one.
    oauth_client_id: str = ""
    oauth_client_secret: str | None = None
    # One team account instead (with oauth): the console gets its token with the client's credentials,
    # the secret above or this private key (PEM) signing JWT assertions; None keeps the stored key.
    oauth_team: bool = False
    oauth_client_key: str | None = None
    # Or workload identity federation (RFC 7523 JWT bearer): the file where the platform keeps the
    # console's identity token, read at each token request; "" for none, None: as it is (a new server: none).
    oauth_workload_token_file: str | None = None
    # Or each person's grant from enterprise-managed authorization: their single sign-on ID token
    # exchanged at the OpenID provider, then presented by the client above (with its secret).
    oauth_enterprise: bool = False
    # Whether OAuth requests carry `resource` (RFC 8707): "send", "omit", or "" for the console's rule
    # (omitted for Microsoft Entra ID); and the Application ID URI that qualifies scopes without it.
    oauth_resource_indicator: str = ""
    oauth_scope_prefix: str = ""
    trusted: bool = False
    idempotent: bool = False
    internal: bool | None = None  # None: as it is (a new server is not internal)
    # How long the server waits for the answer to a question it pushes, in whole seconds ("": unknown).
    hold_seconds: str = ""
    # The one MCP version the console offers the server ("": the newest both speak).
    protocol_version: str = ""


@dataclass(frozen=True)
class Edited:
    server: McpServer
    dropped: list[str]  # stored values left out because the server points elsewhere now
    credentials_dropped: int  # people's own credentials deleted for the same reason


@dataclass(frozen=True)
class TeamOverview:
    team: str
    team_id: str
    members: list[MemberRow]
    servers: list[McpServer]


def settings_of(server: McpServer) -> ServerSettings:
    """The server's settings with every header and environment value left out."""
    return ServerSettings(
        transport=server.transport,
        command=shlex.join(json.loads(server.command_json or "[]")),
        url=server.url or "",
        env=dict.fromkeys(stored_map(server.env_json)),
        headers=dict.fromkeys(stored_map(server.headers_json)),
        credential_name=(server.credential_name or "") if server.credential_mode == "per_user" else "",
        oauth=server.credential_mode in ("oauth", "oauth_team"),
        oauth_team=server.credential_mode == "oauth_team",
        oauth_client_id=json.loads(server.oauth_client_json)["client_id"] if server.oauth_client_json else "",
        oauth_workload_token_file=_workload_of(server) or "",
        oauth_enterprise=bool(
            server.oauth_client_json and json.loads(server.oauth_client_json).get("enterprise") is True
        ),
        oauth_resource_indicator=server.oauth_resource_indicator or "",
        oauth_scope_prefix=server.oauth_scope_prefix or "",
        trusted=server.trusted,
        idempotent=server.idempotent,
        internal=server.internal,
        hold_seconds="" if server.push_hold_seconds is None else str(server.push_hold_seconds),
        protocol_version=server.pinned_protocol or "",
    )


async def team_overview(*, session: AsyncSession, by: Viewer | None, team_name: str) -> TeamOverview:
    """The team's members and servers (disabled ones included), for its admins.

    Raises:
        NotFound, Forbidden.
    """
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    members = await members_of(session=session, team_id=team.id)
    query = select(McpServer).where(McpServer.team_id == team.id).order_by(McpServer.name)
    servers = list((await session.execute(query)).scalars())
    return TeamOverview(team.name, team.id, members, servers)


async def server_for_admin(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str
) -> McpServer:
    """One server of the team, disabled or not, for its admins.

    Raises:
        NotFound, Forbidden.
    """
    _team, server = await _server(session, by, team_name, name)
    return server


async def create_server(
    *,
    session: AsyncSession,
    by: Viewer | None,
    team_name: str,
    name: str,
    settings: ServerSettings,
    outbound: Outbound,
) -> McpServer:
    """Register a server in the team; the one way servers are added (pages, CLI, demo, tests).

    Raises:
        NotFound, Forbidden (recorded as `access_refused`), InvalidInput (with field errors; a name that
        could make names at the gateway's /mcp ambiguous too), Conflict (name taken).
    """
    refusal = await _url_refusal(settings, outbound)
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    name = check_name("server", name)
    if name in RESERVED_NAMES:
        raise InvalidInput("invalid server name", {"name": f"{name!r} is reserved"})
    ambiguous = server_name_problem(name)
    if ambiguous is not None:
        raise InvalidInput("invalid server name", {"name": ambiguous})
    server = McpServer(id=new_id(), team_id=team.id, name=name, internal=False)
    url_error = await _authorize(session, by, team, server, settings, refusal, new=True)
    changed, _dropped = _apply(server, settings, outbound, url_error)
    session.add(server)
    await flush_unique(session, f"server {name!r} already exists in {team_name}")
    _record(session, by, "server_added", server, team_name, changed=changed)
    return server


async def edit_server(
    *,
    session: AsyncSession,
    by: Viewer | None,
    team_name: str,
    name: str,
    settings: ServerSettings,
    outbound: Outbound,
) -> Edited:
    """Change a server's settings; a header or environment value of `None` keeps the stored one, unless
    the server now points elsewhere (another URL, command or transport): then every value not entered
    again is dropped (the OAuth client's secret, key and workload identity token file too), and so are the
    team account's token and the people's own credentials for it.

    Raises:
        NotFound, Forbidden (recorded as `access_refused`), InvalidInput (with field errors).
    """
    refusal = await _url_refusal(settings, outbound)
    team, server = await _server(session, by, team_name, name)
    url_error = await _authorize(session, by, team, server, settings, refusal, new=False)
    changed, dropped = _apply(server, settings, outbound, url_error)
    forgotten: list[str] = []
    if _moved(changed):
        forgotten = await forget_server_credentials(session=session, server_id=server.id)
    if changed:
        _record(
            session,
            by,
            "server_changed",
            server,
            team_name,
            changed=changed,
            dropped=dropped,
            credentials_dropped=len(forgotten),
        )
    return Edited(server, dropped, len(forgotten))


async def set_disabled(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str, disabled: bool
) -> McpServer:
    """Disable a server (new calls to it are refused; calls under way finish) or enable it again.

    Raises:
        NotFound, Forbidden.
    """
    _team, server = await _server(session, by, team_name, name)
    if server.disabled != disabled:
        server.disabled = disabled
        _record(session, by, "server_disabled" if disabled else "server_enabled", server, team_name)
    return server


async def pin_protocol(
    *, session: AsyncSession, by: Viewer | None, team_name: str, name: str, version: str | None
) -> McpServer:
    """Pin the one MCP version the console speaks to a server (None: the newest both speak). A team admin
    may, whatever the transport: it names nothing on the console's host.

    Raises:
        NotFound, Forbidden, InvalidInput (naming `protocol_version`).
    """
    _team, server = await _server(session, by, team_name, name)
    errors: dict[str, str] = {}
    pinned = _pin(version or "", errors)
    if errors:
        raise InvalidInput("the server settings are not valid", errors)
    if server.pinned_protocol != pinned:
        server.pinned_protocol = pinned
        _record(session, by, "server_changed", server, team_name, changed=["protocol_version"])
    return server


def _pin(text: str, errors: dict[str, str]) -> str | None:
    pinned = text.strip() or None
    if pinned is not None and pinned not in PROTOCOL_PINS:
        errors["protocol_version"] = f"one of {', '.join(PROTOCOL_PINS)}, or empty for the newest both speak"
        return None
    return pinned


async def _server(
    session: AsyncSession, by: Viewer | None, team_name: str, name: str
) -> tuple[Team, McpServer]:
    team = await require_team_admin(session=session, by=by, team_name=team_name)
    query = select(McpServer).where(McpServer.team_id == team.id, McpServer.name == name)
    server = (await session.execute(query)).scalar_one_or_none()
    if server is None:
        raise NotFound(f"no server {name!r} in {team_name}")
    return team, server


async def _authorize(
    session: AsyncSession,
    by: Viewer | None,
    team: Team,
    server: McpServer,
    settings: ServerSettings,
    refusal: str | None,
    *,
    new: bool,
) -> str | None:
    """Refuse (and record) a setting that names something on the console's host unless `by` is a site
    admin. For a site admin, why the URL may not be used as the server is (a field error), or None.

    Raises:
        Forbidden.
    """

    async def unless_site_admin(reason: str | None) -> None:
        if reason is None:
            return
        await only_site_admin(
            session=session,
            by=by,
            team_id=team.id,
            attempt="add server" if new else "change server",
            subject_type="team" if new else "server",
            subject_id=team.id if new else server.id,
            reason=reason,
            server=server.name,
        )

    await unless_site_admin(_host_setting(server, settings, new=new))
    internal = server.internal if settings.internal is None else settings.internal
    url_error = None if internal else refusal
    await unless_site_admin(url_error)
    return url_error


def _host_setting(server: McpServer, settings: ServerSettings, *, new: bool) -> str | None:
    """Why a team admin may not save `settings` on `server` (it names something on the console's host),
    or None. A private address is found by resolving the URL, after this."""
    if settings.transport == "stdio" or (not new and server.transport == "stdio"):
        return (
            "only a site admin can add or change a stdio server: it runs a program on the console's host "
            "(team admins can enable or disable it)"
        )
    if settings.internal is not None and settings.internal != server.internal:
        return "only a site admin can mark a server internal (allowed on private addresses)"
    if server.internal and settings.url.strip() != (server.url or ""):
        return "only a site admin can change where an internal server points"
    if any(name.strip() for name in settings.env):
        return "only a site admin can set environment variables: they go to a program on the console's host"
    workload = settings.oauth_workload_token_file
    if workload is not None and workload.strip() != (_workload_of(server) or ""):
        return (
            "only a site admin can set the workload identity token file: it names a file on the console's "
            "host, which the console reads and sends to the authorization server"
        )
    return None


async def _url_refusal(settings: ServerSettings, outbound: Outbound) -> str | None:
    """Why the URL may not be used by a server that is not internal (private addresses not allowed), or
    None. Looked up before the transaction begins: name resolution may wait."""
    if settings.transport != "http" or settings.internal or outbound.allow_private:
        return None
    return await url_refusal(settings.url.strip())


def _apply(
    server: McpServer, settings: ServerSettings, outbound: Outbound, url_error: str | None
) -> tuple[list[str], list[str]]:
    """Validate `settings` and set them on `server`, sealing new values; the names of the fields that
    changed, and of the stored values dropped because the server points elsewhere now."""
    errors: dict[str, str] = {}
    before = _snapshot(server)
    credential = settings.credential_name.strip()
    pattern = HEADER_NAME if settings.transport == "http" else ENV_NAME
    if credential and not pattern.fullmatch(credential):
        errors["credential_name"] = "not a valid header or environment variable name"
    command_json: str | None = None
    url: str | None = None
    if settings.transport == "stdio":
        try:
            argv = shlex.split(settings.command)
        except ValueError as exc:
            argv, errors["command"] = [], f"cannot split the command: {exc}"
        if not argv and "command" not in errors:
            errors["command"] = "give the program to run and its arguments"
        command_json = json.dumps(argv)
    elif settings.transport == "http":
        url = settings.url.strip()
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            errors["url"] = "must be an http(s) URL"
        elif url_error is not None:
            errors["url"] = url_error
    else:
        errors["transport"] = "choose stdio or http"
    hold_seconds = _hold_seconds(settings.hold_seconds, errors)
    pinned = _pin(settings.protocol_version, errors)
    indicator = _resource_indicator(settings.oauth_resource_indicator, errors)
    scope_prefix = _scope_prefix(settings.oauth_scope_prefix, errors)
    if settings.oauth_team and not settings.oauth:
        errors["oauth_team"] = "a team account is an OAuth account: turn OAuth on too"
    if settings.oauth_enterprise and not settings.oauth:
        errors["oauth_enterprise"] = "enterprise-managed authorization is OAuth: turn OAuth on too"
    if settings.oauth and settings.transport != "http":
        errors["oauth"] = "only a server reached over HTTP signs people in with OAuth"
    if settings.oauth and credential:
        errors["credential_name"] = "a server takes each user's OAuth sign-in or a typed credential, not both"
    # Values entered for one place are not sent to another: when the server points elsewhere now, only
    # the values entered again are kept.
    moved = (server.transport, server.command_json, server.url) != (settings.transport, command_json, url)
    dropped: list[str] = []
    oauth_client = _oauth_client(server, settings, outbound, errors, moved=moved, dropped=dropped)
    sealer = _Sealer(outbound, server.id, errors)
    env = sealer.merge(stored_map(server.env_json), settings.env, "env", keep=not moved, dropped=dropped)
    headers = sealer.merge(
        stored_map(server.headers_json), settings.headers, "headers", keep=not moved, dropped=dropped
    )
    if errors:
        raise InvalidInput("the server settings are not valid", errors)
    if settings.transport == "stdio":
        dropped.extend(headers)
        headers = {}
    else:
        dropped.extend(env)
        env = {}
    # Only valid settings reach the row: a refused edit leaves nothing for a later flush to write.
    server.transport, server.command_json, server.url = settings.transport, command_json, url
    server.env_json, server.headers_json = json.dumps(env), json.dumps(headers)
    server.credential_mode = (
        ("oauth_team" if settings.oauth_team else "oauth")
        if settings.oauth
        else "per_user"
        if credential
        else "shared"
    )
    server.credential_name = credential or None
    server.oauth_client_json = oauth_client
    if moved or server.credential_mode != "oauth_team" or before.get("oauth_client") != _client_id_of(server):
        server.team_grant = None  # a token for another place, of another account, or of another client
    server.trusted, server.idempotent = settings.trusted, settings.idempotent
    server.push_hold_seconds = hold_seconds
    server.pinned_protocol = pinned
    server.oauth_resource_indicator, server.oauth_scope_prefix = indicator, scope_prefix
    if settings.internal is not None:
        server.internal = settings.internal
    after = _snapshot(server)
    return [key for key in after if before.get(key) != after[key]], dropped


def _oauth_client(
    server: McpServer,
    settings: ServerSettings,
    outbound: Outbound,
    errors: dict[str, str],
    *,
    moved: bool,
    dropped: list[str],
) -> str | None:
    """The server's hand-registered OAuth client as stored; a secret, key or workload identity token file
    not entered again is kept while the client id stays the same and the server does not move (the names
    of those a move leaves out go to `dropped`); a file is kept only for a team account."""
    client_id = settings.oauth_client_id.strip()
    if not client_id:
        if settings.oauth_team or settings.oauth_enterprise:
            who = "a team account" if settings.oauth_team else "enterprise-managed authorization"
            errors["oauth_client_id"] = f"{who} needs the client registered for it"
        return None
    if len(client_id) > MAX_CLIENT_ID or any(c.isspace() for c in client_id):
        errors["oauth_client_id"] = f"at most {MAX_CLIENT_ID} characters, without spaces"
        return None
    kept = open_oauth_client(outbound.cipher, server) if server.oauth_client_json else None
    if kept is not None and kept.client_id != client_id:
        kept = None
    if kept is not None and moved:
        stored = (kept.secret, kept.private_key, kept.workload_token_file)
        again = (settings.oauth_client_secret, settings.oauth_client_key, settings.oauth_workload_token_file)
        dropped.extend(
            name
            for name, value, entered in zip(OAUTH_CLIENT_VALUES, stored, again, strict=True)
            if value and entered is None
        )
        kept = None
    secret = (
        settings.oauth_client_secret if settings.oauth_client_secret is not None else (kept and kept.secret)
    )
    key = settings.oauth_client_key if settings.oauth_client_key is not None else (kept and kept.private_key)
    if secret and (len(secret) > MAX_VALUE or any(c in secret for c in "\r\n\0")):
        errors["oauth_client_secret"] = "too long or has line breaks"  # noqa: S105  # a message
        return None
    if key and private_key(key) is None:
        errors["oauth_client_key"] = "not a private key in PEM (EC P-256, RSA or Ed25519)"
        return None
    entered = settings.oauth_workload_token_file
    if entered is None:  # as it is: for a team account only
        workload = (kept and kept.workload_token_file or "") if settings.oauth_team else ""
    else:
        workload = entered.strip()
    if workload and (
        len(workload) > MAX_PATH or not PurePosixPath(workload).is_absolute() or "\0" in workload
    ):
        errors["oauth_workload_token_file"] = f"an absolute path of at most {MAX_PATH} characters"
        return None
    if workload and not settings.oauth_team:
        errors["oauth_workload_token_file"] = "a workload identity token is for a team account"  # noqa: S105
        return None
    if settings.oauth_team and not (secret or key or workload):
        needs = "a team account needs its client's secret, private key or workload identity token file"
        errors["oauth_client_secret"] = needs
        return None
    if settings.oauth_enterprise and (problem := _enterprise_problem(settings, bool(secret), outbound)):
        errors["oauth_enterprise"] = problem
        return None
    try:
        entry = OAuthClientEntry(
            client_id, secret or None, key or None, workload or None, settings.oauth_enterprise
        )
        return seal_oauth_client(outbound.cipher, server.id, entry)
    except SecretMissing:
        errors["oauth_client_secret"] = NO_KEY
        return None


def _enterprise_problem(settings: ServerSettings, has_secret: bool, outbound: Outbound) -> str | None:
    """Why enterprise-managed authorization cannot be set up as asked, or None."""
    if settings.oauth_team:
        return "enterprise-managed authorization gets each person's own grant, not a team account's"
    if not has_secret:
        return "enterprise-managed authorization needs the client's secret"
    if outbound.sso is None:
        return "enterprise-managed authorization needs single sign-on (CONSOLE_OIDC_ISSUER) to be set up"
    return None


PrivateKey = ECKey | RSAKey | OKPKey
KEY_CLASSES: tuple[type[ECKey] | type[RSAKey] | type[OKPKey], ...] = (ECKey, RSAKey, OKPKey)


def private_key(text: str) -> PrivateKey | None:
    """The private key (EC, RSA or OKP) a PEM text holds, or None for anything else."""
    if len(text) > MAX_VALUE or "PRIVATE KEY" not in text:
        return None
    for key_class in KEY_CLASSES:
        try:
            key = key_class.import_key(text)
        except (JoseError, ValueError, TypeError):
            continue
        return key if key.is_private else None
    return None


def _resource_indicator(text: str, errors: dict[str, str]) -> str | None:
    mode = text.strip().lower()
    if mode in ("", "auto"):
        return None
    if mode not in RESOURCE_MODES:
        errors["oauth_resource_indicator"] = "send, omit, or empty for the console's rule"
        return None
    return mode


def _scope_prefix(text: str, errors: dict[str, str]) -> str | None:
    """An Application ID URI (e.g. api://<application id> or https://mcp.example.com), or None."""
    prefix = text.strip().rstrip("/")
    if not prefix:
        return None
    parts = urlsplit(prefix)
    if (
        len(prefix) > MAX_SCOPE_PREFIX
        or not parts.scheme
        or not parts.netloc
        or any(c.isspace() or not c.isprintable() for c in prefix)
        or parts.query
        or parts.fragment
    ):
        errors["oauth_scope_prefix"] = (
            f"an Application ID URI such as api://<application id>, at most {MAX_SCOPE_PREFIX} characters"
        )
        return None
    return prefix


def _hold_seconds(text: str, errors: dict[str, str]) -> int | None:
    if not text.strip():
        return None
    try:
        seconds = int(text.strip())
    except ValueError:
        seconds = 0
    if not 1 <= seconds <= MAX_HOLD_SECONDS:
        errors["hold_seconds"] = f"a whole number of seconds from 1 to {MAX_HOLD_SECONDS}, or empty"
        return None
    return seconds


class _Sealer:
    """Merges entered values into stored ones for one server, sealing what it stores."""

    def __init__(self, outbound: Outbound, server_id: str, errors: dict[str, str]) -> None:
        self._cipher, self._server_id, self._errors = outbound.cipher, server_id, errors

    def merge(
        self,
        old: Mapping[str, object],
        new: Mapping[str, str | None],
        field_name: str,
        *,
        keep: bool,
        dropped: list[str],
    ) -> dict[str, object]:
        kind = "env" if field_name == "env" else "header"
        pattern = ENV_NAME if kind == "env" else HEADER_NAME
        merged: dict[str, object] = {}
        for raw_name, value in new.items():
            name = raw_name.strip()
            if not pattern.fullmatch(name):
                self._errors[field_name] = f"{name!r} is not a valid name"
            elif value is None or value == "":
                if name not in old:
                    self._errors[field_name] = f"give a value for {name}"
                elif keep:
                    merged[name] = self._kept(kind, name, old[name])
                else:
                    dropped.append(name)
            elif len(value) > MAX_VALUE or any(c in value for c in "\r\n\0"):
                self._errors[field_name] = f"the value of {name} is too long or has line breaks"
            else:
                merged[name] = self._sealed(kind, name, value, field_name)
        return merged

    def _sealed(self, kind: str, name: str, value: str, field_name: str) -> object:
        try:
            return seal_value(self._cipher, self._server_id, kind, name, value)
        except SecretMissing:
            self._errors[field_name] = NO_KEY
            return None

    def _kept(self, kind: str, name: str, stored: object) -> object:
        if isinstance(stored, dict) or not self._cipher.ready:
            return stored  # sealed already, or plain from an earlier version until there is a key
        return seal_value(self._cipher, self._server_id, kind, name, str(stored))


def _client_id_of(server: McpServer) -> str | None:
    """The hand-registered OAuth client's id (never its secret), for the change record."""
    return json.loads(server.oauth_client_json)["client_id"] if server.oauth_client_json else None


def _workload_of(server: McpServer) -> str | None:
    """The workload identity token file of the server's team account (a path, not a secret), or None."""
    if not server.oauth_client_json:
        return None
    workload = json.loads(server.oauth_client_json).get("workload_token_file")
    return workload if isinstance(workload, str) else None


def _moved(changed: list[str]) -> bool:
    return any(key in changed for key in ("transport", "command", "url"))


def _snapshot(server: McpServer) -> dict[str, object]:
    return {
        "transport": server.transport,
        "command": server.command_json,
        "url": server.url,
        "env": server.env_json,
        "headers": server.headers_json,
        "credential": (server.credential_mode, server.credential_name),
        "oauth_client": _client_id_of(server),
        "oauth_workload_token_file": _workload_of(server),
        "trusted": server.trusted,
        "idempotent": server.idempotent,
        "internal": server.internal,
        "hold_seconds": server.push_hold_seconds,
        "protocol_version": server.pinned_protocol,
        "oauth_resource_indicator": server.oauth_resource_indicator,
        "oauth_scope_prefix": server.oauth_scope_prefix,
    }


def _record(
    session: AsyncSession,
    by: Viewer | None,
    action: str,
    server: McpServer,
    team_name: str,
    changed: list[str] | None = None,
    **extra: object,
) -> None:
    payload: dict[str, object] = {"name": server.name, "team": team_name, "transport": server.transport}
    if changed is not None:
        payload["changed"] = changed
        payload["where"] = describe_server(server)
        payload["env_names"] = sorted(stored_map(server.env_json))
        payload["header_names"] = sorted(stored_map(server.headers_json))
        payload["trusted"], payload["idempotent"] = server.trusted, server.idempotent
        payload["internal"] = server.internal
        payload["hold_seconds"] = server.push_hold_seconds
        payload["protocol_version"] = server.pinned_protocol
        payload.update({key: value for key, value in extra.items() if value})
    record_event(
        session=session,
        actor=actor_of(by),
        action=action,
        subject_type="server",
        subject_id=server.id,
        payload=payload,
    )
