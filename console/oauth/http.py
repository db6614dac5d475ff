"""HTTP to authorization servers and resource metadata: bounded in time and size, public addresses only
unless the MCP server is internal (the same rule as its own connections, console/mcp/addresses.py).

Every response body, Authlib's token responses included, goes through `CappedTransport`, so an
authorization server cannot make the console read more than `MAX_BODY_BYTES`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2

from console.mcp.addresses import public_only_transport
from console.mcp.models import McpServer
from console.mcp.sealed import Outbound
from console.oauth.errors import OAuthRefused

TIMEOUT_SECONDS = 10.0
MAX_BODY_BYTES = 256 * 1024
ACCEPT_JSON = {"Accept": "application/json"}


class BodyTooLarge(httpx2.TransportError):
    pass


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, limit: int) -> None:
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise BodyTooLarge(f"response body over {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """A transport whose response bodies stop with `BodyTooLarge` past `limit` bytes."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, limit: int = MAX_BODY_BYTES) -> None:
        self._inner, self._limit = inner, limit

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)  # noqa: S101  # an async transport's
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(response.stream, self._limit),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass(frozen=True)
class Reach:
    """Where OAuth HTTP may go: `public_only` as for the MCP server it is for."""

    public_only: bool

    @classmethod
    def of(cls, server: McpServer, outbound: Outbound) -> Reach:
        return cls(public_only=outbound.public_only(server))

    def transport(self) -> httpx2.AsyncBaseTransport:
        inner = public_only_transport() if self.public_only else httpx2.AsyncHTTPTransport(trust_env=False)
        return CappedTransport(inner)

    def client(self) -> httpx2.AsyncClient:
        # Redirects are not followed: metadata is read where it was asked for, never where a server sends.
        return httpx2.AsyncClient(timeout=TIMEOUT_SECONDS, transport=self.transport(), follow_redirects=False)


async def get_json(http: httpx2.AsyncClient, url: str, what: str) -> dict[str, Any] | None:
    """The JSON object at `url`, or None when it is not there (a 4xx or a redirect: try the next place).

    Raises:
        OAuthRefused: unreachable, a server error, too large, or not a JSON object.
    """
    try:
        response = await http.get(url, headers=ACCEPT_JSON)
    except httpx2.HTTPError as exc:
        raise OAuthRefused("unreachable", f"cannot read the {what} at {_shown(url)}: {_why(exc)}") from None
    if 300 <= response.status_code < 500:
        return None
    if response.status_code != 200:
        raise OAuthRefused("unreachable", f"the {what} at {_shown(url)} answered HTTP {response.status_code}")
    return object_of(response, f"the {what} at {_shown(url)}")


async def post_json(http: httpx2.AsyncClient, url: str, body: dict[str, Any], what: str) -> dict[str, Any]:
    """POST `body` as JSON; the JSON object answered with 200 or 201.

    Raises:
        OAuthRefused: unreachable, refused, too large, or not a JSON object.
    """
    try:
        response = await http.post(url, json=body, headers=ACCEPT_JSON)
    except httpx2.HTTPError as exc:
        raise OAuthRefused("unreachable", f"cannot reach the {what} at {_shown(url)}: {_why(exc)}") from None
    if response.status_code not in (200, 201):
        raise OAuthRefused("refused", f"the {what} at {_shown(url)} answered HTTP {response.status_code}")
    return object_of(response, f"the {what} at {_shown(url)}")


def object_of(response: httpx2.Response, what: str) -> dict[str, Any]:
    try:
        document = json.loads(response.content)
    except ValueError:
        raise OAuthRefused("invalid_document", f"{what} is not JSON") from None
    if not isinstance(document, dict):
        raise OAuthRefused("invalid_document", f"{what} is not a JSON object")
    return document


def _why(exc: httpx2.HTTPError) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _shown(url: str) -> str:
    """A URL for a message: without its query (which may carry anything)."""
    return url.split("?", 1)[0][:300]
