"""Who is calling the gateway: the console's API tokens as `Authorization: Bearer`, checked on every
HTTP request before a byte of its body is read."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from starlette.types import Receive, Scope, Send

from console.errors import Unauthorized
from console.identity import Principal, authenticate_token
from console.transactions import transaction

REALM = "approval-console"
PRINCIPAL = "console_principal"  # key of the request's state the handlers read the caller from


@dataclass(frozen=True)
class Refusal:
    """An HTTP refusal with a JSON-RPC error body, answered before the SDK sees the request."""

    status: int
    message: str
    code: int = -32001
    challenge: str | None = None  # the WWW-Authenticate header of a 401
    retry_after: int | None = None  # seconds, for a 503

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = {"code": self.code, "message": self.message}
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error})
        headers = [(b"content-type", b"application/json")]
        if self.challenge is not None:
            headers.append((b"www-authenticate", self.challenge.encode()))
        if self.retry_after is not None:
            headers.append((b"retry-after", str(self.retry_after).encode()))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})


async def authenticate(scope: Scope, factory: async_sessionmaker[AsyncSession]) -> Principal | Refusal:
    """The principal of the request's bearer token (also set on `scope` for the handlers, and for the SDK,
    which binds a 2025-11-25 session to the token that opened it), or the 401 to answer."""
    token = _bearer(scope)
    if token is None:
        message = "this MCP endpoint needs an API token (Authorization: Bearer)"
        return Refusal(401, message, challenge=f'Bearer realm="{REALM}"')
    try:
        async with transaction(factory) as session:
            principal = await authenticate_token(session=session, token=token)
    except Unauthorized as exc:
        challenge = f'Bearer realm="{REALM}", error="invalid_token", error_description="{exc.message}"'
        return Refusal(401, exc.message, challenge=challenge)
    # The SDK serves a session only to the credential that opened it; the path is part of that, so a
    # session opened for one server is not used at another.
    client = f"{principal.token_id}:{scope['path']}"
    scope["user"] = AuthenticatedUser(AccessToken(token="", client_id=client, scopes=[]))
    scope.setdefault("state", {})[PRINCIPAL] = principal
    return principal


def still_valid(scope: Scope, factory: async_sessionmaker[AsyncSession]) -> Callable[[], Awaitable[bool]]:
    """Whether the request's token still lets its holder in (not revoked, still a member of its team),
    asked anew on each call: for what a stream tells after the request that opened it was let in."""
    token = _bearer(scope) or ""

    async def check() -> bool:
        try:
            async with transaction(factory) as session:
                await authenticate_token(session=session, token=token)
        except Unauthorized:
            return False
        return True

    return check


def _bearer(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    return None
