"""Which endpoint a call goes out on: per-user and OAuth servers always carry the call owner's own
credential; a call its agent made on a 2025-11-25 gateway session that answers roots goes on a connection
of that session."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.declared import relayed_of
from console.calls.models import Call
from console.errors import ConsoleError
from console.identity.credentials import credential_for
from console.mcp.admin_roots import roots_for_server
from console.mcp.agent_roots import roots_of_agent
from console.mcp.endpoint import ROOTS, AgentSession, Endpoint
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound
from console.oauth.enterprise import enterprise_grant
from console.oauth.grants import bearer_for
from console.oauth.http import Reach
from console.oauth.team import team_bearer


class CredentialMissing(ConsoleError):
    code = "credential_missing"


async def endpoint_for_owner(
    *,
    session: AsyncSession,
    outbound: Outbound,
    server: McpServer,
    owner_id: str,
    owner_name: str,
    force_refresh: bool = False,
) -> Endpoint:
    """The endpoint for a call owned by `owner_id` — never anyone else's credential — with the server's
    roots. An OAuth server's token is refreshed first when it is about to expire, or with `force_refresh`
    (the server refused it); an enterprise-managed server's comes from the owner's single sign-on.

    Raises:
        CredentialMissing: the server wants a per-user credential and the owner has none.
        SecretMissing: a stored value or the credential cannot be opened.
    """
    roots = await roots_for_server(session=session, server=server)
    if server.credential_mode == "oauth_team":
        token = await team_bearer(
            session=session, outbound=outbound, server=server, force_refresh=force_refresh
        )
        return endpoint_for(server, outbound, token, roots=roots)
    if server.credential_mode == "oauth":
        # Without a grant the request goes out bare: the server's refusal says how to get one.
        held = await bearer_for(
            session=session,
            cipher=outbound.cipher,
            reach=Reach.of(server, outbound),
            server=server,
            user_id=owner_id,
            force_refresh=force_refresh,
        ) or await enterprise_grant(session=session, outbound=outbound, server=server, user_id=owner_id)
        if held is None:
            return endpoint_for(server, outbound, roots=roots)
        return endpoint_for(server, outbound, held.token, roots=roots, dpop_key=held.dpop_key or "")
    if server.credential_mode != "per_user":
        return endpoint_for(server, outbound, roots=roots)
    secret = await credential_for(
        session=session, cipher=outbound.cipher, user_id=owner_id, server_id=server.id
    )
    if secret is None:
        raise CredentialMissing(
            f"{owner_name} has no credential for server {server.name!r}; add it on the Connections page"
        )
    return endpoint_for(server, outbound, secret, roots=roots)


async def on_agents_session(
    *, session: AsyncSession, call: Call, owner_id: str, endpoint: Endpoint
) -> Endpoint:
    """The endpoint of the connection of the call's gateway session, told its agent's roots (none when
    none are kept yet), when the agent's client answers roots; otherwise `endpoint`, shared. Roots an
    admin set for the server name places on the console's host and stay what every connection is told,
    so the call then keeps the shared connection."""
    if call.gateway_session is None or ROOTS not in relayed_of(call) or endpoint.roots:
        return endpoint
    kept = await roots_of_agent(session=session, session_id=call.gateway_session, user_id=owner_id)
    return replace(endpoint, roots=kept or (), session=AgentSession(owner_id, call.gateway_session))
