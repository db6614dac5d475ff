"""Which sites may reach the gateway: a request's Host, and its Origin when a browser sent one, must name
the console's own host (its base URL) or a loopback name. A page on another site that got an agent's
token, or a DNS name rebound to the console's address, is refused before anything else; so is a page
whose origin a browser hides (`Origin: null`: a sandboxed frame, a local file), whose site is unknown."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.types import Scope

LOOPBACK_NAMES = frozenset({"localhost"})


def refused_site(scope: Scope, base_url: str) -> str | None:
    """Why the request comes from a site the console does not serve, or None when it may pass."""
    ours = urlsplit(base_url).hostname
    headers = {bytes(name): bytes(value).decode("latin-1") for name, value in scope["headers"]}
    host = _hostname(headers.get(b"host", ""))
    if host is None or not _allowed(host, ours):
        return "the Host header does not name this console"
    origin = headers.get(b"origin")
    if origin == "null":
        return "requests from pages whose origin the browser hides (Origin: null) are refused"
    if origin is not None:
        origin_host = urlsplit(origin).hostname
        if origin_host is None or not _allowed(origin_host, ours):
            return "requests from other sites' pages are refused (Origin)"
    return None


def _hostname(host: str) -> str | None:
    return urlsplit(f"//{host}").hostname if host else None


def _allowed(hostname: str, ours: str | None) -> bool:
    if hostname == ours or hostname in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(hostname).is_loopback
    except ValueError:
        return False
