"""Which endpoint a call goes out on: per-user servers always carry the call owner's own credential."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from console.errors import ConsoleError
from console.identity.credentials import credential_for
from console.mcp.admin_roots import roots_for_server
from console.mcp.endpoint import Endpoint
from console.mcp.models import McpServer
from console.mcp.registry import endpoint_for
from console.mcp.sealed import Outbound


class CredentialMissing(ConsoleError):
    code = "credential_missing"


async def endpoint_for_owner(
    *, session: AsyncSession, outbound: Outbound, server: McpServer, owner_id: str, owner_name: str
) -> Endpoint:
    """The endpoint for a call owned by `owner_id` — never anyone else's credential — with the server's
    roots.

    Raises:
        CredentialMissing: the server wants a per-user credential and the owner has none.
        SecretMissing: a stored value or the credential cannot be opened.
    """
    roots = await roots_for_server(session=session, server=server)
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
