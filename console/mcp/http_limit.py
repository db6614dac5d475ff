"""Streamable HTTP responses read within a limit: no message from the server is held past it.

`ReplyLimit` is a response hook of the connection's HTTP client, so it holds whichever transport fetched
the response (DPoP, public addresses only, a plain one). A JSON body is read here, up to the limit; an
event stream is passed on one event at a time, each within the limit. Past it, the rest is not read: the
response is closed, and the request it answers gets the error `oversize.too_large` makes in place of the
reply, so it fails at once with a reason and the connection goes on (each request has a response of its
own). A response that answers no request (the stream of what the server sends unasked) ends with a read
error instead, as a dropped stream would. The console asks for plain bodies (`Accept-Encoding:
identity`): a compressed one could grow past any limit in one step, so it is refused unread.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp.types as types

from console.mcp.oversize import too_large, too_large_error, too_large_message

EVENT_END = b"\n\n"


class ReplyLimit:
    """The response hook that reads every reply within `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    async def __call__(self, response: httpx2.Response) -> None:
        request_id = _request_id(response.request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await _stream_of(response).aclose()
            said = f"the server compressed its reply ({encoding[:20]}), which the console does not read"
            _answer_instead(response, request_id, types.ErrorData(code=types.INTERNAL_ERROR, message=said))
            return
        content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if content_type == "text/event-stream":
            response.stream = _EventsWithin(_stream_of(response), self.limit, request_id)
            return
        body = await _body_within(response, self.limit)
        if body is None:
            _answer_instead(response, request_id, too_large_error(self.limit))
        else:
            response.stream = httpx2.ByteStream(body)


def _stream_of(response: httpx2.Response) -> httpx2.AsyncByteStream:
    stream = response.stream
    if not isinstance(stream, httpx2.AsyncByteStream):  # pragma: no cover  # an async client's response
        raise TypeError("an async client's response has an async stream")
    return stream


async def _body_within(response: httpx2.Response, limit: int) -> bytes | None:
    """The whole body, or None once it is larger than `limit` (what is left of it is not read)."""
    stream = _stream_of(response)
    declared = response.headers.get("content-length", "")
    body = bytearray()
    try:
        if declared.isdigit() and int(declared) > limit:
            return None
        async for chunk in stream:
            body += chunk
            if len(body) > limit:
                return None
    finally:
        await stream.aclose()  # the response is still open, to be read from the stream given in its place
    return bytes(body)


def _answer_instead(
    response: httpx2.Response, request_id: types.RequestId | None, error: types.ErrorData
) -> None:
    """Give the response the request's `error` as its body, or, answering no request, a body that fails
    to read."""
    for name in ("content-length", "content-encoding"):
        if name in response.headers:
            del response.headers[name]
    if request_id is None:
        response.stream = _Failing(error.message)
        return
    response.headers["content-type"] = "application/json"
    response.stream = httpx2.ByteStream(_json(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)))


def _json(message: types.JSONRPCError) -> bytes:
    return message.model_dump_json(by_alias=True, exclude_none=True).encode()


def _request_id(request: httpx2.Request) -> types.RequestId | None:
    """The id of the JSON-RPC request this HTTP request carries, if it carries one."""
    if request.method != "POST":
        return None
    try:
        sent: Any = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    if not isinstance(sent, dict) or "method" not in sent:
        return None
    found = sent.get("id")
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


class _Failing(httpx2.AsyncByteStream):
    def __init__(self, message: str) -> None:
        self._message = message

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        raise httpx2.ReadError(self._message)


class _EventsWithin(httpx2.AsyncByteStream):
    """An event stream passed on whole event by whole event (line ends written as LF, which means the
    same to an event stream), each at most `limit` bytes; past that, the request's error event ends it."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int, request_id: types.RequestId | None) -> None:
        self._inner = inner
        self._limit = limit
        self._request_id = request_id

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        carried_cr = False
        async for chunk in self._inner:
            if carried_cr:
                chunk = b"\r" + chunk
            carried_cr = chunk.endswith(b"\r")
            if carried_cr:
                chunk = chunk[:-1]
            searched = max(len(pending) - 1, 0)
            pending += chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            while (cut := pending.find(EVENT_END, searched)) >= 0:
                if cut > self._limit:
                    break
                event = bytes(pending[: cut + len(EVENT_END)])
                del pending[: cut + len(EVENT_END)]
                searched = 0
                yield event
            if len(pending) > self._limit:
                await self._inner.aclose()
                if self._request_id is None:
                    raise httpx2.ReadError(too_large_message(self._limit))
                yield b"event: message\ndata: " + _json(too_large(self._request_id, self._limit)) + EVENT_END
                return
        if carried_cr:
            pending += b"\n"
        if pending:
            yield bytes(pending)

    async def aclose(self) -> None:
        await self._inner.aclose()
