"""An HTTP server's refusal to serve without (enough) authorization: 401 or 403 with `WWW-Authenticate`.

MCP authorization (RFC 6750, RFC 9728) puts what the client needs in the Bearer challenge's parameters (a
server taking DPoP-bound tokens, RFC 9449, in its DPoP challenge's):
where the protected resource metadata is (`resource_metadata`), which scopes to ask for (`scope`), and why
(`error`, e.g. `insufficient_scope` on a 403 that asks for more scopes). Everything here came from the
server and is untrusted text: values are length-capped, and the OAuth code validates them before use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console.errors import McpUnavailable

MAX_HEADER_CHARS = 4096
MAX_VALUE_CHARS = 2048
# auth-param = token BWS "=" BWS ( token / quoted-string ) (RFC 9110 section 11.2)
_PARAM = re.compile(r'\s*([!#$%&\'*+.^_`|~0-9A-Za-z-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,"]*)\s*(?:,|$)')
_SCHEME = re.compile(r"\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?:\s+|$)")


@dataclass(frozen=True)
class Challenge:
    status: int  # 401 or 403
    resource_metadata: str | None = None
    scope: str | None = None
    error: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        """The server knows who we are but wants more scopes (a step-up)."""
        return self.status == 403 and self.error == "insufficient_scope"


class AuthorizationRequired(McpUnavailable):
    """The server refused the request for want of a (better) OAuth token; nothing was served."""

    code = "authorization_required"

    def __init__(self, message: str, challenge: Challenge) -> None:
        super().__init__(message, http_status=challenge.status)
        self.challenge = challenge


def challenge_of(status: int, header: str | None) -> Challenge | None:
    """The Bearer challenge of a 401 or 403 response (its parameters, when it has a Bearer one), or None
    for any other status. A 403 that is not about scopes is not a challenge."""
    if status not in (401, 403):
        return None
    params = bearer_params(header or "")
    challenge = Challenge(
        status=status,
        resource_metadata=params.get("resource_metadata"),
        scope=params.get("scope"),
        error=params.get("error"),
    )
    if status == 403 and not challenge.insufficient_scope:
        return None
    return challenge


def bearer_params(header: str) -> dict[str, str]:
    """The parameters of the header's Bearer (or DPoP, RFC 9449) challenge (names lower-cased, values
    unquoted); a header with several challenges (`Basic realm="x", Bearer scope="y"`) is read up to the
    next scheme."""
    text = header[:MAX_HEADER_CHARS]
    position, in_bearer = 0, False
    params: dict[str, str] = {}
    while position < len(text):
        param = _PARAM.match(text, position)
        if param is not None and param.end() > position:
            if in_bearer:
                name, value = param.group(1).lower(), param.group(2)
                if value.startswith('"'):
                    value = re.sub(r"\\(.)", r"\1", value[1:-1])
                if len(value) <= MAX_VALUE_CHARS:
                    params.setdefault(name, value)
            position = param.end()
            continue
        scheme = _SCHEME.match(text, position)
        if scheme is None or scheme.end() == position:
            break
        if in_bearer:
            break  # the next challenge begins
        in_bearer = scheme.group(1).lower() in ("bearer", "dpop")
        position = scheme.end()
    return params
