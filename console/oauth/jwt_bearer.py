"""The JWT bearer grant (RFC 7523 section 2.1): a signed JWT presented to the authorization server as the
grant itself — a workload's identity token (team.py) or an identity assertion grant (enterprise.py)."""

from __future__ import annotations

import httpx2
from authlib.integrations.base_client.errors import OAuthError

from console.oauth.clients import ClientIdentity
from console.oauth.discovery import Discovered
from console.oauth.errors import OAuthRefused
from console.oauth.grants import Tokens, client_id_param, oauth_client, tokens_of
from console.oauth.http import Reach
from console.oauth.resource_indicator import resource_param

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


async def present_assertion(
    reach: Reach, client: ClientIdentity, found: Discovered, assertion: str, *, what: str
) -> Tokens:
    """The authorization server's tokens for `assertion` (`what` it is, for the refusal's message); a
    refusal is final for this request (no other grant is tried).

    Raises:
        OAuthRefused: the authorization server refused or did not answer.
    """
    auth_server = found.auth_server
    try:
        async with oauth_client(client, None, reach, found.scope) as oauth:
            answer = await oauth.fetch_token(
                auth_server.token_endpoint,
                grant_type=JWT_BEARER,
                assertion=assertion,
                **resource_param(found.resource, omitted=found.omit_resource),
                **client_id_param(client),
            )
    except OAuthError as refused:
        said = "".join(c for c in (refused.error or "")[:60] if c.isalnum() or c in "_-")
        raise OAuthRefused(
            "jwt_bearer_rejected",
            f"the authorization server {auth_server.issuer[:300]} refused {what} ({said})",
        ) from None
    except (httpx2.HTTPError, ValueError):
        raise OAuthRefused(
            "jwt_bearer_rejected",
            f"the authorization server {auth_server.issuer[:300]} did not answer about {what}",
        ) from None
    return tokens_of(answer, found.scope)
