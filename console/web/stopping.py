"""Ending the requests still open when the console stops (pure ASGI middleware).

The server waits for every open connection before it stops the app, and some never end on their own: a
browser's live inbox stream, an agent's request held while its call waits for people. `Stopping.stop_after`
gives them a moment and then ends each one still open: a response under way ends where it is, one not
begun is a 503. The call an agent waited on stays as it is (the gateway reads `stopping` before
withdrawing anything).
"""

from __future__ import annotations

import json

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.runtime import Stopping
from console.web.errors import error_body

# The API's error shape, so that an agent reads it like any other refusal.
STOPPING_BODY = json.dumps(error_body("stopping", "The console is stopping; try again in a moment.")).encode()


class EndedWhenStopping:
    def __init__(self, app: ASGIApp, *, stopping: Stopping) -> None:
        self.app = app
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = complete = False

        async def tracked_send(message: Message) -> None:
            nonlocal started, complete
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                complete = True
            await send(message)

        with anyio.CancelScope() as request:
            self.stopping.opened(request)
            try:
                await self.app(scope, receive, tracked_send)
            finally:
                self.stopping.closed(request)
        if not request.cancelled_caught or complete:
            return
        if not started:
            headers = [(b"content-type", b"application/json"), (b"retry-after", b"5")]
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": STOPPING_BODY})
            return
        await send({"type": "http.response.body", "body": b""})
