"""The team policy page: the layers of a team's approval policy, each editable by the team's admins."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import InvalidInput
from console.identity.sessions import SignedIn
from console.identity.teams import require_team_admin
from console.mcp.registry import list_servers
from console.policies.rules import ANSWERERS, EXPIRY_ACTIONS
from console.policies.service import RuleView, list_rules, remove_rule, save_rule
from console.transactions import commit, rollback
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession
from console.web.templating import render

router = APIRouter(include_in_schema=False)
NUMBERS = ("required_approvals", "expiry_minutes", "step_up_minutes", "escalate_after_minutes")


@router.get("/admin/teams/{team_name}/policies")
async def policies_page(
    team_name: str, request: Request, session: DbSession, user: WebUser, edit: str | None = None
) -> Response:
    """With `?edit=<rule id>` the form comes filled in with that rule."""
    return await _page(request, session, user, team_name, edit=edit)


@router.post("/admin/teams/{team_name}/policies")
async def save(team_name: str, request: Request, session: DbSession, user: CsrfUser) -> Response:
    team = await require_team_admin(session=session, by=user.viewer, team_name=team_name)
    form = await request.form()
    posted = {key: str(form.get(key) or "").strip() for key in form}
    scope = posted.get("scope", "")
    server_id = None
    try:
        values = _values(posted)
        if scope in ("server", "tool") and posted.get("server"):
            servers = {s.name: s.id for s in await list_servers(session=session, team_id=team.id)}
            if posted["server"] not in servers:
                raise InvalidInput("the policy is not valid", {"server": "no such server in this team"})
            server_id = servers[posted["server"]]
        await save_rule(
            session=session,
            actor=user.viewer.actor,
            team_id=team.id,
            scope=scope,
            server_id=server_id,
            tool_pattern=(posted.get("tool") or None) if scope == "tool" else None,
            condition=posted.get("when") or None,
            values=values,
        )
    except InvalidInput as exc:
        await rollback(session)
        return await _page(request, session, user, team_name, errors=exc.fields, posted=posted, status=422)
    await commit(session)
    return RedirectResponse(f"/admin/teams/{team_name}/policies", status_code=303)


@router.post("/admin/teams/{team_name}/policies/{rule_id}/remove")
async def remove(team_name: str, rule_id: str, session: DbSession, user: CsrfUser) -> Response:
    team = await require_team_admin(session=session, by=user.viewer, team_name=team_name)
    await remove_rule(session=session, actor=user.viewer.actor, team_id=team.id, rule_id=rule_id)
    await commit(session)
    return RedirectResponse(f"/admin/teams/{team_name}/policies", status_code=303)


def _form_of(view: RuleView) -> dict[str, str]:
    rule = view.rule
    fields = {name: "" if value is None else str(value) for name, value in rule.values().items()}
    fields["no_self_approval"] = {None: "", True: "forbid", False: "allow"}[rule.no_self_approval]
    fields["gate"] = {None: "", True: "gate", False: "no_gate"}[rule.gate]
    fields["allow_edit"] = {None: "", True: "allow", False: "forbid"}[rule.allow_edit]
    fields["sampling"] = {None: "", True: "people", False: "none"}[rule.sampling]
    return {
        **fields,
        "scope": rule.scope,
        "server": view.server_name or "",
        "tool": rule.tool_pattern or "",
        "when": rule.condition or "",
    }


def _values(posted: dict[str, str]) -> dict[str, Any]:
    """Form text to rule settings; a blank field inherits. Raises InvalidInput with field errors."""
    errors: dict[str, str] = {}
    values: dict[str, Any] = {
        "answerers": posted.get("answerers") or None,
        "expiry_action": posted.get("expiry_action") or None,
        "no_self_approval": {"": None, "forbid": True, "allow": False}.get(
            posted.get("no_self_approval", "")
        ),
        "gate": {"": None, "gate": True, "no_gate": False}.get(posted.get("gate", "")),
        "allow_edit": {"": None, "allow": True, "forbid": False}.get(posted.get("allow_edit", "")),
        "sampling": {"": None, "people": True, "none": False}.get(posted.get("sampling", "")),
        "escalate_to": posted.get("escalate_to") or None,
    }
    choices = {
        "no_self_approval": ("", "forbid", "allow"),
        "gate": ("", "gate", "no_gate"),
        "allow_edit": ("", "allow", "forbid"),
        "sampling": ("", "people", "none"),
    }
    for name, allowed in choices.items():
        if posted.get(name, "") not in allowed:
            errors[name] = f"choose {', '.join(value or 'inherit' for value in allowed)}"
    for name in NUMBERS:
        text = posted.get(name, "")
        if not text:
            values[name] = None
        elif text.isascii() and text.isdigit():
            values[name] = int(text)
        else:
            errors[name] = "a whole number, or blank to inherit"
    if errors:
        raise InvalidInput("the policy is not valid", errors)
    return values


async def _page(
    request: Request,
    session: DbSession,
    user: SignedIn,
    team_name: str,
    *,
    errors: dict[str, str] | None = None,
    posted: dict[str, str] | None = None,
    edit: str | None = None,
    status: int = 200,
) -> Response:
    team = await require_team_admin(session=session, by=user.viewer, team_name=team_name)
    servers = [s.name for s in await list_servers(session=session, team_id=team.id)]
    rules = await list_rules(session=session, team_id=team.id)
    await commit(session)
    editing = next((r for r in rules if r.rule.id == edit), None)
    if editing is not None and posted is None:
        posted = _form_of(editing)
    context = {
        "user": user,
        "team": team,
        "rules": rules,
        "servers": servers,
        "answerers": ANSWERERS,
        "expiry_actions": EXPIRY_ACTIONS,
        "errors": errors or {},
        "posted": posted or {},
    }
    return render(request, "policies/index.html", context, status=status)
