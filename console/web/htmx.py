"""The one place that tells an htmx request from a plain browser request."""

from __future__ import annotations

from fastapi import Request


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"
