"""Whether the console's OAuth requests to a server's authorization server carry `resource` (RFC 8707),
and what scopes it asks for when they do not.

MCP authorization says every authorization and token request names the MCP server in `resource`.
Microsoft Entra ID's v2.0 endpoints refuse it next to their scopes (`invalid_target`, AADSTS9010010) and
want scopes qualified by the application they are for: `<Application ID URI>/<scope>`, or
`<Application ID URI>/.default` for all the application's permissions.

The rule: a server's setting "send" or "omit" decides; without one, `resource` is omitted when the
authorization server is Entra's v2.0 endpoint in one of Microsoft's clouds (`ENTRA_HOSTS`), and sent
everywhere else. When it is omitted and the server has an Application ID URI set, each scope asked for
that is not a URI already, nor one of OpenID Connect's, is qualified by it; with none left, the
application's `.default` is asked for; `offline_access` is always added (Entra issues a refresh token
only for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from console.mcp.models import McpServer

SEND, OMIT = "send", "omit"
MODES = (SEND, OMIT)
# Entra ID's sign-in hosts: the global cloud, US Government, and China (operated by 21Vianet).
ENTRA_HOSTS = frozenset(
    {"login.microsoftonline.com", "login.microsoftonline.us", "login.partner.microsoftonline.cn"}
)
OPENID_SCOPES = frozenset({"openid", "profile", "email", "offline_access"})
OFFLINE_ACCESS = "offline_access"
DEFAULT_SCOPE = ".default"


@dataclass(frozen=True)
class ResourceIndicator:
    """A server's setting: `mode` "send", "omit" or None (the rule); `scope_prefix` the Application ID
    URI that qualifies scopes when `resource` is omitted, or None."""

    mode: str | None = None
    scope_prefix: str | None = None

    def omits(self, issuer: str, authorization_endpoint: str) -> bool:
        """Whether requests to this authorization server leave `resource` out."""
        if self.mode is not None:
            return self.mode == OMIT
        return is_entra_v2(issuer) or is_entra_v2(authorization_endpoint)


def is_entra_v2(url: str) -> bool:
    """Whether `url` is on an Entra ID sign-in host under a v2.0 path (the issuer
    `https://login.microsoftonline.com/<tenant>/v2.0`, or its `/oauth2/v2.0/...` endpoints). Entra's v1.0
    endpoints want `resource`, so they are not."""
    parts = urlsplit(url)
    return (parts.hostname or "").lower() in ENTRA_HOSTS and "/v2.0" in parts.path


def qualified_scope(scope: str | None, prefix: str) -> str:
    """`scope` for an application whose Application ID URI is `prefix` (see the module's rule)."""
    base = prefix.rstrip("/")
    names: list[str] = []
    for name in (scope or "").split():
        if name not in OPENID_SCOPES and "://" not in name:
            name = f"{base}/{name}"
        if name not in names:
            names.append(name)
    if all(name in OPENID_SCOPES for name in names):
        names.insert(0, f"{base}/{DEFAULT_SCOPE}")
    if OFFLINE_ACCESS not in names:
        names.append(OFFLINE_ACCESS)
    return " ".join(names)


def resource_param(resource: str, *, omitted: bool) -> dict[str, str]:
    """The `resource` parameter of a request, or nothing when it is omitted."""
    return {} if omitted else {"resource": resource}


def indicator_of(server: McpServer) -> ResourceIndicator:
    """The server's setting."""
    return ResourceIndicator(server.oauth_resource_indicator, server.oauth_scope_prefix)
