"""Admin pages for teams: the teams you manage, a team's members, and every API token of the team."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import InvalidInput
from console.identity.models import ROLES
from console.identity.team_tokens import revoke_team_token, team_tokens
from console.identity.teams import add_member, administered_teams, change_role, new_team, remove_member
from console.mcp.admin import team_overview
from console.mcp.registry import describe_server
from console.policies.service import list_rules
from console.transactions import commit
from console.web.admin_roots import roots_context, save_roots_form
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, form_fields
from console.web.htmx import is_htmx
from console.web.templating import render

router = APIRouter(include_in_schema=False)


def team_url(team_name: str, tail: str = "") -> str:
    return f"/admin/teams/{quote(team_name, safe='')}{tail}"


async def _index(
    request: Request, session: DbSession, user: WebUser, *, error: str | None = None, status: int = 200
) -> Response:
    teams = await administered_teams(session=session, by=user.viewer)
    await commit(session)
    return render(request, "admin/index.html", {"user": user, "teams": teams, "error": error}, status=status)


@router.get("/admin")
async def index(request: Request, session: DbSession, user: WebUser) -> Response:
    return await _index(request, session, user)


@router.post("/admin/teams")
async def create_team(request: Request, session: DbSession, user: CsrfUser) -> Response:
    name = (await form_fields(request, name=200)).get("name", "")
    try:
        team = await new_team(session=session, by=user.viewer, name=name)
    except InvalidInput as exc:
        message = f"{exc.message}: {next(iter(exc.fields.values()), '')}"
        return await _index(request, session, user, error=message, status=422)
    await commit(session)
    return RedirectResponse(team_url(team.name), status_code=303)


async def _team(
    request: Request,
    session: DbSession,
    user: WebUser,
    team_name: str,
    roots: dict[str, Any] | None = None,
    status: int = 200,
) -> Response:
    overview = await team_overview(session=session, by=user.viewer, team_name=team_name)
    context = {
        "user": user,
        "base": team_url(overview.team),
        "overview": overview,
        "roles": ROLES,
        "where": {s.id: describe_server(s) for s in overview.servers},
        "rules": await list_rules(session=session, team_id=overview.team_id),
    }
    if not is_htmx(request):
        context.update(roots or await roots_context(session, user.viewer, team_name))
    await commit(session)
    if is_htmx(request):
        return render(request, "admin/team.html", context, block="member_list")
    return render(request, "admin/team.html", context, status=status)


@router.get("/admin/teams/{team_name}")
async def team(team_name: str, request: Request, session: DbSession, user: WebUser) -> Response:
    return await _team(request, session, user, team_name)


@router.post("/admin/teams/{team_name}/roots")
async def roots(team_name: str, request: Request, session: DbSession, user: CsrfUser) -> Response:
    refused = await save_roots_form(session, user.viewer, team_name, None, await request.form())
    if refused is None:
        return RedirectResponse(team_url(team_name, "#default-roots"), status_code=303)
    return await _team(request, session, user, team_name, refused, status=422)


async def _members_changed(request: Request, session: DbSession, user: CsrfUser, team_name: str) -> Response:
    await commit(session)
    if is_htmx(request):
        return await _team(request, session, user, team_name)
    return RedirectResponse(team_url(team_name), status_code=303)


@router.post("/admin/teams/{team_name}/members")
async def add(
    team_name: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
) -> Response:
    fields = await form_fields(request, name=200, role=20)
    name, role = fields.get("name", ""), fields.get("role", "member")
    await add_member(session=session, by=user.viewer, team_name=team_name, user_name=name.strip(), role=role)
    return await _members_changed(request, session, user, team_name)


@router.post("/admin/teams/{team_name}/members/{user_name}")
async def change(
    team_name: str,
    user_name: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
) -> Response:
    role = (await form_fields(request, role=20)).get("role", "")
    await change_role(session=session, by=user.viewer, team_name=team_name, user_name=user_name, role=role)
    return await _members_changed(request, session, user, team_name)


@router.post("/admin/teams/{team_name}/members/{user_name}/remove")
async def remove(
    team_name: str, user_name: str, request: Request, session: DbSession, user: CsrfUser
) -> Response:
    await remove_member(session=session, by=user.viewer, team_name=team_name, user_name=user_name)
    return await _members_changed(request, session, user, team_name)


@router.get("/admin/teams/{team_name}/tokens")
async def tokens(team_name: str, request: Request, session: DbSession, user: WebUser) -> Response:
    rows = await team_tokens(session=session, by=user.viewer, team_name=team_name)
    await commit(session)
    return render(
        request,
        "admin/tokens.html",
        {"user": user, "team": team_name, "base": team_url(team_name), "tokens": rows},
    )


@router.post("/admin/teams/{team_name}/tokens/{token_id}/revoke")
async def revoke(team_name: str, token_id: str, session: DbSession, user: CsrfUser) -> Response:
    await revoke_team_token(session=session, by=user.viewer, team_name=team_name, token_id=token_id)
    await commit(session)
    return RedirectResponse(team_url(team_name, "/tokens"), status_code=303)
