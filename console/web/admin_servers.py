"""Admin pages for a team's MCP servers: add, edit, disable and enable, and test the connection."""

from __future__ import annotations

from dataclasses import replace
from itertools import zip_longest
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.datastructures import FormData

from console.calls.pin_advice import with_pin_advice
from console.errors import Conflict, InvalidInput
from console.identity.teams import require_team_admin
from console.mcp.admin import (
    ServerSettings,
    create_server,
    edit_server,
    server_for_admin,
    set_disabled,
    settings_of,
)
from console.mcp.models import McpServer
from console.mcp.probe import ProbeOutcome, probe_server
from console.mcp.sealed import Outbound
from console.transactions import commit, rollback
from console.web.admin import team_url
from console.web.admin_roots import roots_context, save_roots_form
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, RuntimeDep, SettingsDep
from console.web.htmx import is_htmx
from console.web.templating import render

router = APIRouter(include_in_schema=False)
NEW_PAGE = "admin/server_new.html"
PAGE = "admin/server.html"


def server_url(team_name: str, server_name: str, tail: str = "") -> str:
    return team_url(team_name, f"/servers/{quote(server_name, safe='')}{tail}")


def settings_from(form: FormData) -> ServerSettings:
    """The settings a server form describes; a blank value keeps the stored one. The internal checkbox
    and the workload identity token file count only when the form showed them (to site admins)."""
    internal = _one(form, "internal") == "on" if "internal_shown" in form else None
    workload = _one(form, "oauth_workload_token_file") if "oauth_workload_token_file" in form else None
    return ServerSettings(
        transport=_one(form, "transport"),
        command=_one(form, "command"),
        url=_one(form, "url"),
        env=_pairs(form, "env"),
        headers=_pairs(form, "header"),
        credential_name=_one(form, "credential_name"),
        **_auth_mode(form),
        oauth_client_key=_one(form, "oauth_client_key") or None,
        oauth_client_id=_one(form, "oauth_client_id"),
        oauth_client_secret=_one(form, "oauth_client_secret") or None,
        oauth_workload_token_file=workload,
        oauth_resource_indicator=_one(form, "oauth_resource_indicator"),
        oauth_scope_prefix=_one(form, "oauth_scope_prefix"),
        trusted=_one(form, "trusted") == "on",
        idempotent=_one(form, "idempotent") == "on",
        internal=internal,
        hold_seconds=_one(form, "hold_seconds"),
        protocol_version=_one(form, "protocol_version"),
    )


AUTH_MODES = ("none", "oauth", "oauth_team", "oauth_enterprise")


def _auth_mode(form: FormData) -> dict[str, bool]:
    """The page's one choice of who the server sees (`auth`), or the three boxes that scripts written
    before it post (`oauth`, `oauth_team`, `oauth_enterprise`: on); no choice is `none`.

    Raises:
        InvalidInput: an `auth` value that is none of the choices.
    """
    boxes = {box for box in AUTH_MODES[1:] if _one(form, box) == "on"}
    mode = _one(form, "auth") or "none"
    if mode not in AUTH_MODES:
        raise InvalidInput(
            "not a choice of who the server sees", fields={"auth": f"one of {', '.join(AUTH_MODES)}"}
        )
    chosen = boxes or ({mode} - {"none"})
    return {
        "oauth": bool(chosen),
        "oauth_team": "oauth_team" in chosen,
        "oauth_enterprise": "oauth_enterprise" in chosen,
    }


def _one(form: FormData, key: str) -> str:
    value = form.get(key)
    return value.strip() if isinstance(value, str) else ""


def _pairs(form: FormData, prefix: str) -> dict[str, str | None]:
    names = [v for v in form.getlist(f"{prefix}_name") if isinstance(v, str)]
    values = [v for v in form.getlist(f"{prefix}_value") if isinstance(v, str)]
    removed = set(form.getlist(f"{prefix}_remove"))
    return {
        name.strip(): value or None
        for name, value in zip_longest(names, values, fillvalue="")
        if name.strip() and name.strip() not in removed
    }


def _context(
    user: WebUser,
    team_name: str,
    settings: ServerSettings,
    *,
    server: McpServer | None = None,
    errors: dict[str, str] | None = None,
    outcome: ProbeOutcome | None = None,
    dropped: list[str] | None = None,
) -> dict[str, Any]:
    masked = replace(settings, env=dict.fromkeys(settings.env), headers=dict.fromkeys(settings.headers))
    if settings.oauth_workload_token_file is None:  # not on a team admin's form: the stored one stays
        stored = settings_of(server).oauth_workload_token_file if server is not None else ""
        masked = replace(masked, oauth_workload_token_file=stored)
    return {
        "user": user,
        "team": team_name,
        "base": team_url(team_name),
        "server": server,
        "settings": masked,  # never a header or environment value, not even one just typed
        "errors": errors or {},
        "outcome": outcome,
        "dropped": dropped or [],
    }


@router.get("/admin/teams/{team_name}/servers/new")
async def new(team_name: str, request: Request, session: DbSession, user: WebUser) -> Response:
    await require_team_admin(session=session, by=user.viewer, team_name=team_name)
    await commit(session)
    return render(request, NEW_PAGE, {**_context(user, team_name, ServerSettings()), "name": ""})


@router.post("/admin/teams/{team_name}/servers")
async def create(
    team_name: str, request: Request, session: DbSession, user: CsrfUser, runtime: RuntimeDep
) -> Response:
    form = await request.form()
    settings, name = settings_from(form), _one(form, "name")
    try:
        await create_server(
            session=session,
            by=user.viewer,
            team_name=team_name,
            name=name,
            settings=settings,
            outbound=Outbound.of(runtime.settings),
        )
    except (InvalidInput, Conflict) as exc:
        await rollback(session)
        # A taken name is shown next to the name field, like any other mistake in the form.
        fields = exc.fields if isinstance(exc, InvalidInput) else {}
        context = {
            **_context(user, team_name, settings, errors=fields or {"name": exc.message}),
            "name": name,
        }
        return render(request, NEW_PAGE, context, status=409 if isinstance(exc, Conflict) else 422)
    await commit(session)
    return RedirectResponse(server_url(team_name, name), status_code=303)


@router.get("/admin/teams/{team_name}/servers/{server_name}")
async def detail(
    team_name: str, server_name: str, request: Request, session: DbSession, user: WebUser
) -> Response:
    server = await server_for_admin(session=session, by=user.viewer, team_name=team_name, name=server_name)
    await commit(session)
    # Names only, shown after an edit that dropped them (never a value).
    dropped = [v for v in request.query_params.getlist("dropped") if v][:50]
    context = _context(user, team_name, settings_of(server), server=server, dropped=dropped)
    context["credentials_dropped"] = request.query_params.get("credentials") == "deleted"
    context.update(await roots_context(session, user.viewer, team_name, server_name))
    return render(request, PAGE, context)


@router.post("/admin/teams/{team_name}/servers/{server_name}/roots")
async def roots(
    team_name: str, server_name: str, request: Request, session: DbSession, user: CsrfUser
) -> Response:
    refused = await save_roots_form(session, user.viewer, team_name, server_name, await request.form())
    if refused is None:
        return RedirectResponse(server_url(team_name, server_name, "#roots"), status_code=303)
    server = await server_for_admin(session=session, by=user.viewer, team_name=team_name, name=server_name)
    context = {**_context(user, team_name, settings_of(server), server=server), **refused}
    return render(request, PAGE, context, status=422)


@router.post("/admin/teams/{team_name}/servers/{server_name}")
async def edit(
    team_name: str,
    server_name: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
    runtime: RuntimeDep,
) -> Response:
    settings = settings_from(await request.form())
    try:
        edited = await edit_server(
            session=session,
            by=user.viewer,
            team_name=team_name,
            name=server_name,
            settings=settings,
            outbound=Outbound.of(runtime.settings),
        )
    except InvalidInput as exc:
        await rollback(session)
        server = await server_for_admin(
            session=session, by=user.viewer, team_name=team_name, name=server_name
        )
        context = _context(
            user, team_name, settings, server=server, errors=exc.fields or {"form": exc.message}
        )
        context.update(await roots_context(session, user.viewer, team_name, server_name))
        return render(request, PAGE, context, status=422)
    await commit(session)
    notice: dict[str, list[str]] = {"dropped": sorted(edited.dropped)}
    if edited.credentials_dropped:
        notice["credentials"] = ["deleted"]
    query = urlencode(notice, doseq=True)
    query = f"?{query}" if query else ""
    return RedirectResponse(server_url(team_name, server_name, query), status_code=303)


@router.post("/admin/teams/{team_name}/servers/{server_name}/disable")
async def disable(team_name: str, server_name: str, session: DbSession, user: CsrfUser) -> Response:
    await set_disabled(session=session, by=user.viewer, team_name=team_name, name=server_name, disabled=True)
    await commit(session)
    return RedirectResponse(server_url(team_name, server_name), status_code=303)


@router.post("/admin/teams/{team_name}/servers/{server_name}/enable")
async def enable(team_name: str, server_name: str, session: DbSession, user: CsrfUser) -> Response:
    await set_disabled(session=session, by=user.viewer, team_name=team_name, name=server_name, disabled=False)
    await commit(session)
    return RedirectResponse(server_url(team_name, server_name), status_code=303)


@router.post("/admin/teams/{team_name}/servers/{server_name}/test")
async def test_connection(
    team_name: str,
    server_name: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
    settings: SettingsDep,
) -> Response:
    server = await server_for_admin(session=session, by=user.viewer, team_name=team_name, name=server_name)
    await commit(session)  # no transaction stays open while the server is reached
    server, outcome = await probe_server(
        session=session, by=user.viewer, team_name=team_name, server=server, outbound=Outbound.of(settings)
    )
    await commit(session)
    outcome = await with_pin_advice(
        session=session,
        server=server,
        team_name=team_name,
        outcome=outcome,
        outbound=Outbound.of(settings),
    )
    context = _context(user, team_name, settings_of(server), server=server, outcome=outcome)
    if is_htmx(request):
        return render(request, PAGE, context, block="probe_outcome")
    context.update(await roots_context(session, user.viewer, team_name, server_name))
    return render(request, PAGE, context)
