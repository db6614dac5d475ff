"""What a person is told before they connect their account: where they will sign in, and what they grant."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from console.mcp.challenge import Challenge
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.discovery import discover
from console.oauth.errors import OAuthRefused
from console.oauth.http import Reach
from console.oauth.resource_indicator import indicator_of


@dataclass(frozen=True)
class SignInHint:
    auth_host: str | None  # None: the authorization server cannot be found now (connecting will say why)
    scope: str | None


async def sign_in_hint(*, server: McpServer, outbound: Outbound, challenge: Challenge) -> SignInHint:
    """Discover the server's authorization server as connecting will; nothing is registered or stored."""
    try:
        async with Reach.of(server, outbound).client() as http:
            found = await discover(http, server.url or "", challenge, indicator_of(server))
    except OAuthRefused:
        return SignInHint(None, challenge.scope)
    return SignInHint(urlsplit(found.auth_server.authorization_endpoint).netloc, found.scope)
