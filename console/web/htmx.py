"""The one place that tells an htmx request from a plain browser request, and redirects either."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response


def is_htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def redirect_to_reauthentication(request: Request, back_to: str) -> Response:
    """Send the person to sign in again, then back to `back_to` (htmx follows HX-Redirect)."""
    target = f"/reauth?next={quote(back_to, safe='/')}"
    if is_htmx(request):
        return Response(status_code=204, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)
