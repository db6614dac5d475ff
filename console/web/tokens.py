"""The API tokens page: people create tokens for their agents (shown once, with the webhook secret that signs
callbacks), see when each was used, give one a new webhook secret, revoke."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.errors import InvalidInput
from console.identity.tokens import IssuedToken, issue_token, list_tokens, revoke_token, rotate_webhook_secret
from console.mcp.sealed import Outbound
from console.runtime import runtime_of
from console.transactions import commit
from console.web.auth import CsrfUser, WebUser
from console.web.deps import DbSession, SettingsDep, form_fields
from console.web.templating import render

router = APIRouter(include_in_schema=False)


async def _page(
    request: Request,
    session: DbSession,
    user: WebUser,
    *,
    new: IssuedToken | None = None,
    error: str | None = None,
    status: int = 200,
) -> Response:
    tokens = await list_tokens(session=session, user_name=user.viewer.user_name)
    await commit(session)  # the request's unit of work, whatever it wrote before
    teams = sorted(user.viewer.team_names.items(), key=lambda item: item[1])
    context = {"user": user, "tokens": tokens, "teams": teams, "new": new, "error": error}
    if new is not None and new.token:
        context |= connect_agent(runtime_of(request.app).settings.base_url, new.token)
    return render(request, "tokens/index.html", context, status=status)


@router.get("/tokens")
async def tokens_page(request: Request, session: DbSession, user: WebUser) -> Response:
    return await _page(request, session, user)


@router.post("/tokens")
async def create(
    request: Request,
    session: DbSession,
    user: CsrfUser,
    settings: SettingsDep,
) -> Response:
    fields = await form_fields(request, name=200, team=100)
    name, team = fields.get("name", ""), fields.get("team", "")
    if team not in user.viewer.roles:
        return await _page(request, session, user, error="choose one of your teams", status=422)
    try:
        issued = await issue_token(
            session=session,
            actor=user.viewer.actor,
            user_id=user.viewer.user_id,
            team_id=team,
            name=name,
            cipher=Outbound.of(settings).cipher,
        )
    except InvalidInput as exc:
        return await _page(
            request, session, user, error=next(iter(exc.fields.values()), exc.message), status=422
        )
    # The one and only time the secret is shown: this response, never stored, never redirected.
    return await _page(request, session, user, new=issued)


@router.post("/tokens/{token_id}/webhook-secret")
async def new_webhook_secret(
    token_id: str, request: Request, session: DbSession, user: CsrfUser, settings: SettingsDep
) -> Response:
    secret = await rotate_webhook_secret(
        session=session,
        actor=user.viewer.actor,
        cipher=Outbound.of(settings).cipher,
        token_id=token_id,
        owner_id=user.viewer.user_id,
    )
    # Shown once, like a new token's.
    return await _page(request, session, user, new=IssuedToken("", secret))


@router.post("/tokens/{token_id}/revoke")
async def revoke(token_id: str, request: Request, session: DbSession, user: CsrfUser) -> Response:
    await revoke_token(
        session=session, actor=user.viewer.actor, token_id=token_id, owner_id=user.viewer.user_id
    )
    await commit(session)
    return RedirectResponse("/tokens", status_code=303)


def connect_agent(base_url: str, token: str) -> dict[str, str]:
    """How an agent connects with a new token: the gateway's address and an `mcpServers` entry for it."""
    mcp_url = f"{base_url.rstrip('/')}/mcp"
    entry = {"type": "http", "url": mcp_url, "headers": {"Authorization": f"Bearer {token}"}}
    return {"mcp_url": mcp_url, "mcp_servers": json.dumps({"mcpServers": {"console": entry}}, indent=2)}
