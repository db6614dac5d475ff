"""The demo's Team notes (console/demo/notes.py) with two knobs for tests.

Run:
    python tests/servers/oauth_server.py --http 0

Besides what Team notes does:
    POST /test/forget-access-tokens   it forgets every access token it issued (refresh tokens stay), as a
                                      server does that revokes tokens early or restarted
    OAUTH_HIDE_PKCE=1                 its authorization server metadata leaves out
                                      code_challenge_methods_supported, as an authorization server
                                      without PKCE does
    OAUTH_OTHER_RESOURCE=1            its protected resource metadata names another server's resource, as
                                      a server does that passes on someone else's metadata
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from console.demo.notes import Provider, build_server, serve
from console.listening import mcp_port

METADATA_PATH = "/.well-known/oauth-authorization-server"
RESOURCE_METADATA_PREFIX = "/.well-known/oauth-protected-resource"
OTHER_RESOURCE = "https://other-notes.example/mcp"


class HidePkce:
    """Serves the authorization server metadata without code_challenge_methods_supported."""

    def __init__(self, app: Any, settings: AuthSettings) -> None:
        self._app = app
        metadata = build_metadata(
            settings.issuer_url,
            None,
            settings.client_registration_options or ClientRegistrationOptions(),
            settings.revocation_options or RevocationOptions(),
        ).model_dump(mode="json", exclude_none=True)
        metadata.pop("code_challenge_methods_supported", None)
        self._metadata = metadata

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != METADATA_PATH:
            await self._app(scope, receive, send)
            return
        await JSONResponse(self._metadata)(scope, receive, send)


class OtherResource:
    """Serves protected resource metadata that names another server's resource."""

    def __init__(self, app: Any, base: str) -> None:
        self._app = app
        self._metadata = {"resource": OTHER_RESOURCE, "authorization_servers": [base]}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(RESOURCE_METADATA_PREFIX):
            await self._app(scope, receive, send)
            return
        await JSONResponse(self._metadata)(scope, receive, send)


def build_app(base: str, provider: Provider) -> Any:
    server = build_server(base, provider)

    @server.custom_route("/test/forget-access-tokens", methods=["POST"])  # type: ignore[untyped-decorator]  # the SDK's
    async def forget_access_tokens(request: Request) -> Response:
        provider.access.clear()
        return PlainTextResponse("forgotten")

    app: Any = server.streamable_http_app()
    if os.environ.get("OAUTH_HIDE_PKCE") == "1":
        assert server.settings.auth is not None
        app = HidePkce(app, server.settings.auth)
    if os.environ.get("OAUTH_OTHER_RESOURCE") == "1":
        app = OtherResource(app, base)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="Team notes with test knobs.")
    anyio.run(serve, port or 0, build_app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
