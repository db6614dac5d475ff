"""The demo's "Team notes": an MCP server behind MCP authorization, with its own authorization server.

Run:
    python -m console.demo.notes --http 0     # Streamable HTTP on 127.0.0.1, any free port

It prints `listening on http://127.0.0.1:<port>/mcp` once it accepts connections. Built on the `mcp` SDK's
server-side auth: one process is both the authorization server (RFC 8414 metadata, dynamic client
registration, authorization code with PKCE S256, refresh tokens, revocation, `iss` in the authorization
response) and the resource server (protected resource metadata; every MCP request needs a bearer token it
issued for this resource, else 401 with `WWW-Authenticate: Bearer ... resource_metadata=...`).

People sign in on its page `/login`: a form with one field, `name`; whoever submits a name is that person
(it is a demo). Tokens carry that name as their subject; everything lives in memory for one run,
unless OAUTH_STATE_FILE names a file to keep clients and tokens in.

Tools:
    whoami        "signed in as <name>" — whose token the request carried

Environment:
    OAUTH_TOKEN_SECONDS   lifetime of access tokens (default 3600)
    OAUTH_ENTERPRISE_IDP, OAUTH_ENTERPRISE_CLIENT   identity assertion grants from an organisation's
                          identity provider, presented by one client (console/demo/notes_enterprise.py)
    OAUTH_STATE_FILE      a file to keep the registered clients and the tokens in, so that a restart on
                          the same port keeps every connection (read at start, written on each change)
    OAUTH_LOG             a file to append one JSON line per token event to: {"event": "issued" | "asserted" |
                          "refreshed" | "revoked", "subject", "scopes", "resource"} (never a token)
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    IdentityAssertionParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from console.demo.notes_enterprise import Enterprise
from console.demo.notes_page import sign_in_page
from console.files import write_private
from console.listening import listening_socket, mcp_port, serve_socket_and_announce

READ = "notes:read"
CODE_SECONDS = 300
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


@dataclass
class Pending:
    client_id: str
    params: AuthorizationParams


@dataclass
class Provider:
    """An in-memory authorization server: clients, codes and tokens live as long as the process."""

    issuer: str
    token_seconds: int
    log_path: str | None
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    pending: dict[str, Pending] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    enterprise: Enterprise | None = None
    state_path: Path | None = None

    def __post_init__(self) -> None:
        if self.state_path is not None and self.state_path.exists():
            self._load(self.state_path)
        if self.enterprise is not None:
            self.clients[self.enterprise.client_id] = OAuthClientInformationFull(
                client_id=self.enterprise.client_id,
                client_secret=self.enterprise.client_secret,
                token_endpoint_auth_method="client_secret_basic",  # noqa: S106  # a method name
                grant_types=[JWT_BEARER],
                redirect_uris=None,
            )

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[_client_id(client_info)] = client_info
        self._save()

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        request_id = secrets.token_urlsafe(16)
        self.pending[request_id] = Pending(_client_id(client), params)
        return f"{self.issuer}/login?{urlencode({'request': request_id})}"

    def signed_in(self, request_id: str, name: str) -> str:
        """Where the browser goes once `name` signed in: the client's redirect URI with a code."""
        pending = self.pending.pop(request_id)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=pending.params.scopes or [READ],
            expires_at=time.time() + CODE_SECONDS,
            client_id=pending.client_id,
            code_challenge=pending.params.code_challenge,
            redirect_uri=pending.params.redirect_uri,
            redirect_uri_provided_explicitly=pending.params.redirect_uri_provided_explicitly,
            resource=pending.params.resource,
            subject=name,
        )
        return construct_redirect_uri(
            str(pending.params.redirect_uri), code=code, state=pending.params.state, iss=self.issuer
        )

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(
            client,
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
            "issued",
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh.get(refresh_token)
        return token if token is not None and token.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        self._save()
        return self._issue(
            client, scopes or refresh_token.scopes, refresh_token.resource, refresh_token.subject, "refreshed"
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        # The whole grant goes: every token of this person for this client.
        mine = (token.subject, token.client_id)
        self.access = {k: v for k, v in self.access.items() if (v.subject, v.client_id) != mine}
        self.refresh = {k: v for k, v in self.refresh.items() if (v.subject, v.client_id) != mine}
        self._save()
        self._log("revoked", token.subject, token.scopes, token.resource)

    async def exchange_identity_assertion(
        self, client: OAuthClientInformationFull, params: IdentityAssertionParams
    ) -> OAuthToken:
        if self.enterprise is None:
            raise TokenError("unsupported_grant_type", "this server takes no identity assertions")
        resource = f"{self.issuer}/mcp"
        claims = await self.enterprise.verified(
            params.assertion, audience=self.issuer, resource=resource, client_id=_client_id(client)
        )
        # The grant, not the request, says what is granted: its resource, and reading at most.
        asked = str(claims.get("scope") or READ).split()
        scopes = [READ] if READ in asked else []
        if not scopes:
            raise TokenError("invalid_scope", f"the grant does not cover {READ}")
        return self._issue(client, scopes, resource, str(claims["sub"]), "asserted", refresh=False)

    def _issue(
        self,
        client: OAuthClientInformationFull,
        scopes: list[str],
        resource: str | None,
        subject: str | None,
        event: str,
        *,
        refresh: bool = True,
    ) -> OAuthToken:
        client_id = _client_id(client)
        access = secrets.token_urlsafe(24)
        refresh_token = secrets.token_urlsafe(24) if refresh else None
        expires = int(time.time()) + self.token_seconds
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
            subject=subject,
        )
        if refresh_token is not None:
            self.refresh[refresh_token] = RefreshToken(
                token=refresh_token, client_id=client_id, scopes=scopes, resource=resource, subject=subject
            )
        self._save()
        self._log(event, subject, scopes, resource)
        return OAuthToken(
            access_token=access,
            token_type="Bearer",  # noqa: S106  # the token type, not a secret
            expires_in=self.token_seconds,
            refresh_token=refresh_token,
            scope=" ".join(scopes),
        )

    def _save(self) -> None:
        """Write the registered clients and the tokens to `state_path` (whole: aside, then renamed)."""
        if self.state_path is None:
            return
        enterprise = self.enterprise.client_id if self.enterprise is not None else None
        state = {
            "clients": [c.model_dump(mode="json") for k, c in self.clients.items() if k != enterprise],
            "access": [t.model_dump(mode="json") for t in self.access.values()],
            "refresh": [t.model_dump(mode="json") for t in self.refresh.values()],
        }
        aside = self.state_path.with_name(self.state_path.name + ".part")
        aside.unlink(missing_ok=True)
        write_private(aside, json.dumps(state))
        aside.replace(self.state_path)

    def _load(self, path: Path) -> None:
        state = json.loads(path.read_text(encoding="utf-8"))
        for item in state["clients"]:
            client = OAuthClientInformationFull.model_validate(item)
            self.clients[_client_id(client)] = client
        self.access = {t.token: t for t in map(AccessToken.model_validate, state["access"])}
        self.refresh = {t.token: t for t in map(RefreshToken.model_validate, state["refresh"])}

    def _log(self, event: str, subject: str | None, scopes: list[str], resource: str | None) -> None:
        if self.log_path:
            line = {"event": event, "subject": subject, "scopes": scopes, "resource": resource}
            with open(self.log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps(line) + "\n")


def _client_id(client: OAuthClientInformationFull) -> str:
    """The id the SDK gives every client it registers (its model allows none only before that)."""
    return client.client_id or ""


def build_server(base: str, provider: Provider) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "team-notes",
        log_level="WARNING",  # the SDK's start and stop notices would clutter the demo's terminal
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,  # type: ignore[arg-type]  # pydantic parses the URL
            resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
            validate_token_resource=True,  # a token issued for another resource is refused
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=[READ, "offline_access"], default_scopes=[READ]
            ),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[READ],
            identity_assertion_enabled=provider.enterprise is not None,
        ),
    )

    @server.tool()
    def whoami() -> str:
        token = get_access_token()
        return f"signed in as {token.subject if token else 'nobody'}"

    @server.custom_route("/login", methods=["GET"])  # type: ignore[untyped-decorator]  # the SDK's
    async def login_page(request: Request) -> Response:
        request_id = request.query_params.get("request", "")
        pending = provider.pending.get(request_id)
        if pending is None:
            return HTMLResponse("unknown sign-in", status_code=400)
        client = provider.clients.get(pending.client_id)
        scopes = pending.params.scopes or [READ]
        return HTMLResponse(sign_in_page(request_id, client.client_name if client else None, scopes))

    @server.custom_route("/login", methods=["POST"])  # type: ignore[untyped-decorator]  # the SDK's
    async def login(request: Request) -> Response:
        form = await request.form()
        request_id, name = str(form.get("request", "")), str(form.get("name", "")).strip()
        if request_id not in provider.pending or not name:
            return HTMLResponse("unknown sign-in", status_code=400)
        return RedirectResponse(provider.signed_in(request_id, name), status_code=302)

    return server


def build_app(base: str, provider: Provider) -> Any:
    return build_server(base, provider).streamable_http_app()


async def serve(port: int, build: Callable[[str, Provider], Any] = build_app) -> None:
    """Serve on 127.0.0.1:`port` (0: any free port) what `build` makes of the base URL and a provider,
    and announce the MCP endpoint."""
    sock = listening_socket("127.0.0.1", port)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    provider = Provider(
        issuer=base,
        token_seconds=int(os.environ.get("OAUTH_TOKEN_SECONDS", "3600")),
        log_path=os.environ.get("OAUTH_LOG"),
        enterprise=Enterprise.from_env(),
        state_path=Path(os.environ["OAUTH_STATE_FILE"]) if os.environ.get("OAUTH_STATE_FILE") else None,
    )
    await serve_socket_and_announce(build(base, provider), sock, "/mcp")


def main(argv: Sequence[str] | None = None) -> int:
    port = mcp_port(
        argv, description="The demo's Team notes: an MCP server behind OAuth, with its own sign-in."
    )
    try:
        anyio.run(serve, port or 0)
    except KeyboardInterrupt:  # Ctrl+C at the terminal reaches `console demo` and this child alike
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
