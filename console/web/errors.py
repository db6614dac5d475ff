"""Mapping `ConsoleError`s (and framework errors) to JSON error responses."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from console.errors import (
    Conflict,
    ConsoleError,
    Forbidden,
    Gone,
    InvalidInput,
    McpError,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
)

logger = logging.getLogger(__name__)

STATUS: dict[type[ConsoleError], int] = {
    NotFound: 404,
    Unauthorized: 401,
    Forbidden: 403,
    Conflict: 409,
    Gone: 410,
    PayloadTooLarge: 413,
    InvalidInput: 422,
    McpError: 502,
}


def status_for(exc: ConsoleError) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 400


def error_body(code: str, message: str, fields: dict[str, str] | None = None) -> dict[str, object]:
    error: dict[str, object] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


def install(app: FastAPI) -> None:
    @app.exception_handler(ConsoleError)
    async def _console_error(_request: Request, exc: ConsoleError) -> JSONResponse:
        fields = exc.fields if isinstance(exc, InvalidInput) else None
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return JSONResponse(
            error_body(exc.code, exc.message, fields), status_code=status_for(exc), headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        fields = {".".join(str(p) for p in err["loc"][1:]) or "body": err["msg"] for err in exc.errors()}
        return JSONResponse(error_body("invalid", "invalid request", fields), status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse(error_body("http_error", str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, _exc: Exception) -> JSONResponse:
        logger.exception("unhandled error")
        return JSONResponse(error_body("internal", "internal error"), status_code=500)
