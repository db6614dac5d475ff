"""Caps on request bodies, enforced as the bytes stream in (pure ASGI, so nothing is buffered first).

A route reads its body only after it knows who is calling; the cap makes sure that even then no body
is read past its route's limit. A declared Content-Length above the cap is refused before the first
byte is read, and a chunked upload as soon as it passes the cap.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ANSWER_BODY_LIMIT = 1024 * 1024
FORM_BODY_LIMIT = 64 * 1024  # sign-in, admin and every other body
CALLS = re.compile(r"/api/v1/runs/[^/]+/calls")
ANSWERS = re.compile(r"(/api/v1)?/elicitations/[^/]+(/answer)?")
GATEWAY = re.compile(r"/mcp(/[^/]+)?")  # an agent's MCP requests carry a call's params


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a body passes its cap.

    A starlette HTTPException, so that FastAPI's own form parsing passes it on instead of answering 400.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body is larger than {limit} bytes")


def limits(*, max_params_bytes: int) -> Callable[[str], int]:
    """The body cap of each path: a call's params, an answer, or a small form."""

    def limit_for(path: str) -> int:
        if CALLS.fullmatch(path) or GATEWAY.fullmatch(path):
            return max_params_bytes
        if ANSWERS.fullmatch(path):
            return ANSWER_BODY_LIMIT
        return FORM_BODY_LIMIT

    return limit_for


class BodyLimits:
    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _content_length(scope)
        received = 0

        async def capped_receive() -> Message:
            nonlocal received
            if declared is not None and declared > limit:
                raise BodyTooLarge(limit)
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, capped_receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None
