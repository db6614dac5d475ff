"""`/healthz`: 200 once the app and its database answer."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sqlalchemy import text

router = APIRouter()


@router.get("/healthz", include_in_schema=False)
async def healthz(request: Request) -> JSONResponse:
    if not getattr(request.app.state, "ready", False):
        return JSONResponse({"status": "starting"}, status_code=503)
    async with request.app.state.factory() as session:
        await session.execute(text("SELECT 1"))
    return JSONResponse({"status": "ok"})
