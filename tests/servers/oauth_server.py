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
    OAUTH_ENTRA_APP_ID_URI=api://x    its authorization server behaves as Microsoft Entra ID's v2.0
                                      endpoints do for an application with that Application ID URI: an
                                      authorization or token request naming a `resource` is refused
                                      (invalid_target, AADSTS9010010), and so is one whose scopes are not
                                      `<Application ID URI>/<scope>` (or OpenID Connect's); a token's
                                      audience is the application's, this server (each refusal is logged
                                      to OAUTH_LOG as {"event": "refused", "error", "at"})
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import fields
from typing import Any
from urllib.parse import parse_qs, urlencode

import anyio
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from console.demo.notes import READ, Provider, build_server, serve
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


OPENID_SCOPES = ("openid", "profile", "email", "offline_access")


class EntraProvider(Provider):
    """Grants what Entra ID would for the application's qualified scopes: the short scope in the token, for
    the application's audience (this server) whether or not a `resource` was named."""

    app_id_uri: str = ""

    def _issue(
        self,
        client: Any,
        scopes: list[str],
        resource: str | None,
        subject: str | None,
        event: str,
        *,
        refresh: bool = True,
    ) -> Any:
        app_scopes = (f"{self.app_id_uri}/{READ}", f"{self.app_id_uri}/.default")
        granted = list(dict.fromkeys(READ if scope in app_scopes else scope for scope in scopes))
        audience = resource or f"{self.issuer}/mcp"
        return super()._issue(client, granted, audience, subject, event, refresh=refresh)


class EntraLike:
    """Refuses, as Entra ID's v2.0 endpoints do, an authorization or token request with `resource` or with
    scopes not qualified by the application's ID URI: an authorization request back to its redirect URI
    with the error (RFC 6749 section 4.1.2.1), a token request with HTTP 400."""

    def __init__(self, app: Any, app_id_uri: str, log_path: str | None) -> None:
        self._app, self._prefix, self._log_path = app, app_id_uri + "/", log_path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path")
        if scope["type"] != "http" or path not in ("/authorize", "/token"):
            await self._app(scope, receive, send)
            return
        if path == "/authorize":
            params = _first(parse_qs(scope.get("query_string", b"").decode()))
            refusal = self._refusal(params, authorizing=True)
            if refusal is None:
                await self._app(scope, receive, send)
                return
            error, description = refusal
            self._log(error, "authorize")
            back = {"error": error, "error_description": description, "state": params.get("state", "")}
            redirect = params.get("redirect_uri", "")
            await RedirectResponse(f"{redirect}?{urlencode(back)}", status_code=302)(scope, receive, send)
            return
        body, replay = await _read_body(receive)
        refusal = self._refusal(_first(parse_qs(body.decode())), authorizing=False)
        if refusal is None:
            await self._app(scope, replay, send)
            return
        error, description = refusal
        self._log(error, "token")
        answer = JSONResponse({"error": error, "error_description": description}, status_code=400)
        await answer(scope, replay, send)

    def _refusal(self, params: dict[str, str], *, authorizing: bool) -> tuple[str, str] | None:
        if "resource" in params:
            return (
                "invalid_target",
                "AADSTS9010010: The resource parameter provided in the request doesn't match with the "
                "requested scopes.",
            )
        scopes = params.get("scope", "").split()
        ours = [name for name in scopes if name not in OPENID_SCOPES]
        if any(not name.startswith(self._prefix) for name in ours) or (authorizing and not ours):
            return (
                "invalid_scope",
                f"AADSTS70011: The provided value for the input parameter 'scope' is not valid: "
                f"{' '.join(scopes)[:200]}",
            )
        return None

    def _log(self, error: str, at: str) -> None:
        if self._log_path:
            with open(self._log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"event": "refused", "error": error, "at": at}) + "\n")


def _first(query: dict[str, list[str]]) -> dict[str, str]:
    return {name: values[0] for name, values in query.items()}


async def _read_body(receive: Any) -> tuple[bytes, Any]:
    """The request's body, and a `receive` that hands it to the app again."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        following: dict[str, Any] = await receive()
        return following

    return body, replay


def entra_provider(provider: Provider, app_id_uri: str) -> EntraProvider:
    entra = EntraProvider(**{f.name: getattr(provider, f.name) for f in fields(provider)})
    entra.app_id_uri = app_id_uri
    return entra


def build_app(base: str, provider: Provider) -> Any:
    app_id_uri = os.environ.get("OAUTH_ENTRA_APP_ID_URI")
    if app_id_uri:
        provider = entra_provider(provider, app_id_uri)
    server = build_server(base, provider)
    if app_id_uri:
        assert server.settings.auth is not None
        registration = server.settings.auth.client_registration_options
        assert registration is not None
        registration.valid_scopes = [
            READ,
            "offline_access",
            f"{app_id_uri}/{READ}",
            f"{app_id_uri}/.default",
        ]

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
    if app_id_uri:
        app = EntraLike(app, app_id_uri, provider.log_path)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(argv, description="Team notes with test knobs.")
    anyio.run(serve, port or 0, build_app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
