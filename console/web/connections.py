"""The Connections page: each person's own credentials for the servers that want one per user: typed in,
or connected with OAuth (console/web/oauth.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.config import secret_text
from console.identity.credentials import CredentialCipher, delete_credential, save_credential, saved_servers
from console.mcp.registry import describe_server, per_user_servers
from console.mcp.sealed import Outbound
from console.oauth.enterprise import enterprise_client
from console.oauth.grants import grant_facts
from console.transactions import commit
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, SettingsDep, form_fields
from console.web.templating import render

router = APIRouter(include_in_schema=False)


@router.get("/connections")
async def connections(request: Request, session: DbSession, user: WebUser, settings: SettingsDep) -> Response:
    servers = await per_user_servers(session=session, team_ids=list(user.viewer.roles))
    saved = await saved_servers(session=session, user_id=user.viewer.user_id)
    await commit(session)
    outbound = Outbound.of(settings)
    rows = [
        {
            "server": s,
            "where": describe_server(s),
            "team": user.viewer.team_names.get(s.team_id, ""),
            "saved": saved.get(s.id),
            "grant": grant_facts(saved.get(s.id)) if s.credential_mode == "oauth" else None,
            "enterprise": enterprise_client(outbound, s) is not None,
        }
        for s in servers
    ]
    provider = settings.oidc_provider_name
    return render(request, "connections/index.html", {"user": user, "rows": rows, "provider": provider})


@router.post("/connections/{server_id}")
async def save(
    server_id: str,
    request: Request,
    session: DbSession,
    user: CsrfUser,
    settings: SettingsDep,
) -> Response:
    fields = await form_fields(request, secret=8192, action=20)
    secret, action = fields.get("secret", ""), fields.get("action", "save")
    servers = await per_user_servers(session=session, team_ids=list(user.viewer.roles))
    if server_id not in {s.id for s in servers if s.credential_mode == "per_user"}:
        return RedirectResponse("/connections", status_code=303)
    if action == "delete":
        await delete_credential(
            session=session, actor=user.viewer.actor, user_id=user.viewer.user_id, server_id=server_id
        )
    else:
        cipher = CredentialCipher(secret_text(settings))
        await save_credential(
            session=session,
            cipher=cipher,
            actor=user.viewer.actor,
            user_id=user.viewer.user_id,
            server_id=server_id,
            secret=secret,
        )
    await commit(session)
    return RedirectResponse("/connections", status_code=303)
