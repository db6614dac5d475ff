"""`/api/docs`: the agent API described by the vendored Swagger UI, under the console's own CSP.

FastAPI's built-in page loads Swagger UI from a CDN and starts it with an inline script; both are blocked
by `script-src 'self'`. This page loads the pinned copy from /static/vendor and starts it from
/static/api-docs.js, so it works offline too.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from console.web.templating import render

router = APIRouter()


@router.get("/api/docs", include_in_schema=False)
async def api_docs(request: Request) -> Response:
    return render(request, "api/docs.html", {"openapi_url": request.app.openapi_url})
