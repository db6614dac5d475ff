"""Where an HTTP server may be: on public addresses, unless it is internal or the settings allow private ones.

Checked twice: when a server is saved (the URL's host, resolved) and on every connection, where the
address the socket connects to is one that was just checked (a name that resolved to a public address
when it was saved may resolve to a private one later).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import anyio
import httpcore2
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Refusal = Callable[[IPAddress], str | None]
RESOLVE_SECONDS = 5.0
UNIQUE_LOCAL = ipaddress.IPv6Network("fc00::/7")
NOT_ALLOWED = "only a server a site admin marks internal may use one"


def refusal(address: IPAddress) -> str | None:
    """What kind of address a server that is not internal may not use ("a loopback address"); None for a
    public address."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_loopback:
        kind = "loopback"
    elif address.is_link_local:
        kind = "link-local"
    elif isinstance(address, ipaddress.IPv6Address) and address in UNIQUE_LOCAL:
        kind = "unique-local"
    elif address.is_private:
        kind = "private"
    elif address.is_global and not address.is_multicast:
        return None
    else:
        kind = "non-public"
    return f"a {kind} address"


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to (a literal address is itself).

    Raises:
        OSError: the name does not resolve.
    """
    literal = _literal(host)
    if literal is not None:
        return [literal]
    found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for *_rest, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]))
        if address not in addresses:
            addresses.append(address)
    return addresses


def first_refusal(host: str, addresses: Iterable[IPAddress], refuse: Refusal = refusal) -> str | None:
    """Why `host` may not be used (naming the first non-public address it has), or None."""
    literal = _literal(host)
    for address in addresses:
        kind = refuse(address)
        if kind is not None:
            if literal is not None:
                return f"{host.strip('[]')} is {kind}: {NOT_ALLOWED}"
            return f"{host} resolves to {address}, {kind}: {NOT_ALLOWED}"
    return None


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


async def url_refusal(url: str) -> str | None:
    """Why a server that is not internal may not be saved with `url`, or None.

    A name that does not resolve now is accepted: every connection checks again.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with anyio.fail_after(RESOLVE_SECONDS):
            addresses = await resolve(host, port)
    except (OSError, TimeoutError, ValueError):
        return None
    return first_refusal(host, addresses)


class PublicOnlyBackend(httpcore2.AsyncNetworkBackend):
    """Opens TCP connections to public addresses only: it resolves the host itself, refuses when any of
    its addresses is not public, and connects to an address it checked, so no second lookup can swap in
    another one."""

    def __init__(self, refuse: Refusal = refusal) -> None:
        self._backend = httpcore2.AnyIOBackend()
        self._refuse = refuse

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's interface
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                addresses = await resolve(host, port)
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as exc:
            raise httpcore2.ConnectError(f"cannot resolve {host}: {exc}") from None
        reason = first_refusal(host, addresses, self._refuse)
        if reason is not None:
            raise httpcore2.ConnectError(f"refused: {reason}")
        failure = httpcore2.ConnectError(f"{host} has no address")
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = httpcore2.ConnectError(str(exc))
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109  # httpcore's interface
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:  # pragma: no cover  # httpx2 calls it only for a `uds` transport
        raise httpcore2.ConnectError("refused: a Unix socket is not a public address")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


def public_only_transport(refuse: Refusal = refusal) -> httpx2.AsyncHTTPTransport:
    """An HTTP transport whose every connection goes through `PublicOnlyBackend`; it ignores proxy
    settings from the environment, since a proxy would connect on our behalf without this check.
    (`refuse` lets a test on a machine without public addresses see a connection go through.)"""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # httpx2 takes no network backend, so its pool is replaced by one with ours and the same limits.
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=httpx2.create_ssl_context(),
        max_connections=100,
        max_keepalive_connections=20,
        keepalive_expiry=5.0,
        network_backend=PublicOnlyBackend(refuse),
    )
    return transport
