"""What operators and load balancers ask: `/healthz` (the process serves), `/readyz` (its database answers
and has the newest schema, and its background loops run: console/background.py) and `/metrics`
(Prometheus text format, for a scraper holding CONSOLE_METRICS_TOKEN)."""

from __future__ import annotations

import hmac
import logging
from pathlib import Path

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from console.audit.witnessing import restore_problem
from console.metrics import Readings, kept_here
from console.migrate import head_revision
from console.reports.operations import read_into
from console.transactions import transaction
from console.web.deps import RuntimeDep

logger = logging.getLogger(__name__)

router = APIRouter()

# A database that takes longer than this to answer one trivial query (every pooled connection busy, a
# server that stopped answering) leaves the process unable to do its work.
READY_DATABASE_SECONDS = 5.0


@router.get("/healthz", include_in_schema=False)
async def healthz() -> JSONResponse:
    return JSONResponse({"status": "ok"})


@router.get("/readyz", include_in_schema=False)
async def readyz(runtime: RuntimeDep) -> JSONResponse:
    if not runtime.life.ready:
        return JSONResponse({"status": "starting"}, status_code=503)
    try:
        with anyio.fail_after(READY_DATABASE_SECONDS):
            async with runtime.factory() as session:
                schema = (await session.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    except (SQLAlchemyError, OSError, TimeoutError):
        return JSONResponse({"status": "database unavailable"}, status_code=503)
    if schema != head_revision():
        body = {"status": "migrations pending", "database": schema, "newest": head_revision()}
        return JSONResponse(body, status_code=503)
    troubles = runtime.life.health.troubles()
    if troubles:  # each loop that waits out a database error, or stopped: the work it does is not done
        return JSONResponse({"status": "background work stalled", "loops": troubles}, status_code=503)
    try:
        with anyio.fail_after(READY_DATABASE_SECONDS):
            async with runtime.factory() as session:
                witnessed = await restore_problem(session=session, settings=runtime.settings)
    except (SQLAlchemyError, OSError, TimeoutError):
        return JSONResponse({"status": "database unavailable"}, status_code=503)
    if witnessed is not None:  # restored from an older backup, or the witness cannot be written
        # /readyz is anonymous: the reason names the witness file's place on the host only in the log.
        logger.warning("not ready: %s", witnessed)
        path = runtime.settings.audit_witness_file
        shown = witnessed.replace(str(Path(path)), "file").replace(path, "file") if path else witnessed
        return JSONResponse({"status": "audit witness", "reason": shown}, status_code=503)
    return JSONResponse({"status": "ready"})


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, runtime: RuntimeDep) -> Response:
    token = runtime.settings.metrics_token
    if token is None:
        return JSONResponse({"error": {"code": "not_found", "message": "not found"}}, status_code=404)
    sent = request.headers.get("Authorization", "")
    if not hmac.compare_digest(sent.encode(), f"Bearer {token.get_secret_value()}".encode()):
        return JSONResponse(
            {"error": {"code": "unauthorized", "message": "the metrics token is required"}},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
    readings = Readings()
    async with transaction(runtime.factory) as session:
        await read_into(readings, session)
    scraped = CollectorRegistry()
    scraped.register(readings)
    return Response(generate_latest(kept_here()) + generate_latest(scraped), media_type=CONTENT_TYPE_LATEST)
