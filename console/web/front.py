"""An endpoint served ahead of the web app's routing (pure ASGI middleware).

The MCP gateway answers every request of an agent's session: walking the web app's route table and its
exception and dependency layers first cost a gateway call more than a tenth of its time. The body caps
and security headers still apply: this sits inside them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.web.limits import BodyTooLarge


class ServedFirst:
    """Requests whose path matches `pattern` go to `endpoint` (its named groups as `path_params`);
    a method not in `methods` is a 405, as the router would answer it."""

    def __init__(self, app: ASGIApp, *, pattern: str, endpoint: ASGIApp, methods: Sequence[str]) -> None:
        self.app = app
        self._pattern = re.compile(pattern)
        self._endpoint = endpoint
        self._methods = tuple(methods)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        matched = self._pattern.fullmatch(scope["path"]) if scope["type"] == "http" else None
        if matched is None:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in self._methods:
            await _answer(send, 405, "Method Not Allowed", [(b"allow", ", ".join(self._methods).encode())])
            return
        scope["path_params"] = {k: v for k, v in matched.groupdict().items() if v is not None}
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self._endpoint(scope, receive, tracked_send)
        except BodyTooLarge as exc:  # the router's exception layer would have answered it
            if started:
                raise
            body = json.dumps(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": exc.detail}}
            )
            await _answer(send, 413, body, [(b"content-type", b"application/json")])


async def _answer(send: Send, status: int, body: str, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})
