"""Mapping `ConsoleError`s (and framework errors) to JSON error responses."""

from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markupsafe import escape
from sqlalchemy.exc import SQLAlchemyError
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
from console.identity.sessions import SignedIn, resolve
from console.outage import DatabaseUnavailable, unavailable
from console.runtime import runtime_of
from console.transactions import transaction
from console.web.auth import SignInRequired, policy, session_cookie_name, sign_in_redirect
from console.web.htmx import is_htmx
from console.web.invisible import reveal
from console.web.limits import BodyTooLarge
from console.web.security import HEADERS
from console.web.templating import render

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
    DatabaseUnavailable: 503,
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


HEADINGS = {
    401: "Sign in first",
    403: "Not allowed",
    404: "Not found",
    405: "Wrong kind of request",
    409: "Already decided",
    410: "Gone",
    413: "Too large",
    422: "Invalid input",
    429: "Slow down",
    500: "Something went wrong",
    503: "Try again shortly",
}


# What a page says instead of the framework's bare reason phrase ("Not Found" under the heading "Not found").
PLAIN = {
    404: "There is no page at this address.",
    405: "This address does not take that kind of request.",
}


def _said(exc: HTTPException) -> str:
    detail = str(exc.detail)
    try:
        phrase = HTTPStatus(exc.status_code).phrase
    except ValueError:
        return detail
    return PLAIN.get(exc.status_code, detail) if detail == phrase else detail


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def as_sentence(message: str) -> str:
    """The message with a capital first letter and a full stop, as a page shows it."""
    message = message.strip()
    if not message:
        return message
    message = message[0].upper() + message[1:]
    return message if message[-1] in ".!?" else message + "."


async def _viewer(request: Request, status: int) -> SignedIn | None:
    """Who is signed in, for the page's navigation; None when nobody is or the database cannot say."""
    if status == 503 or not request.cookies.get(session_cookie_name(request)):
        return None
    try:
        async with transaction(runtime_of(request.app).factory) as session:
            return await resolve(
                session=session, token=request.cookies[session_cookie_name(request)], policy=policy(request)
            )
    except (SQLAlchemyError, OSError):
        return None  # the error page itself must not fail; it shows the sign-in link instead


async def _page(request: Request, status: int, message: str) -> Response:
    heading = HEADINGS.get(status, "Error")
    if is_htmx(request):
        # A fragment for the #flash area; the page around it stays as it was.
        return HTMLResponse(
            reveal(f'<p class="field-error" role="alert">{escape(heading)}: {escape(message)}</p>'),
            status_code=status,
            headers={"HX-Retarget": "#flash", "HX-Reswap": "innerHTML"},
        )
    user = await _viewer(request, status)
    context = {
        "user": user,
        "show_sign_in": user is None,
        "status": status,
        "heading": heading,
        "message": as_sentence(message),
    }
    return render(request, "errors/error.html", context, status=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(SignInRequired)
    async def _sign_in(request: Request, _exc: SignInRequired) -> Response:
        return sign_in_redirect(request)

    @app.exception_handler(ConsoleError)
    async def _console_error(request: Request, exc: ConsoleError) -> Response:
        if not _wants_json(request):
            return await _page(request, status_for(exc), exc.message)
        fields = exc.fields if isinstance(exc, InvalidInput) else None
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
        return JSONResponse(
            error_body(exc.code, exc.message, fields), status_code=status_for(exc), headers=headers
        )

    @app.exception_handler(DatabaseUnavailable)
    async def _unavailable(request: Request, exc: DatabaseUnavailable) -> Response:
        logger.warning("answered 503 to %s %s: %s", request.method, request.url.path, exc.message)
        response = await _console_error(request, exc)
        response.headers["Retry-After"] = str(exc.retry_after)
        return response

    @app.exception_handler(SQLAlchemyError)
    async def _database_error(request: Request, exc: SQLAlchemyError) -> Response:
        outage = unavailable(exc)
        if outage is None:
            raise exc  # to the handler of unexpected errors, outside the middleware
        return await _unavailable(request, outage)

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge) -> Response:
        return await _console_error(request, PayloadTooLarge(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        fields = {".".join(str(p) for p in err["loc"][1:]) or "body": err["msg"] for err in exc.errors()}
        if not _wants_json(request):
            return await _page(request, 422, "; ".join(f"{v} (field {k})" for k, v in fields.items()))
        return JSONResponse(error_body("invalid", "invalid request", fields), status_code=422)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException) -> Response:
        if not _wants_json(request):
            return await _page(request, exc.status_code, _said(exc))
        return JSONResponse(error_body("http_error", str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> Response:
        outage = unavailable(exc)  # one raised inside a task group arrives in an exception group
        if outage is not None:
            response = await _unavailable(request, outage)
            _add_headers(response)
            return response
        logger.exception("unhandled error")
        if not _wants_json(request):
            response = await _page(request, 500, "The console hit an unexpected error; it has been logged.")
        else:
            response = JSONResponse(error_body("internal", "internal error"), status_code=500)
        _add_headers(response)
        return response


def _add_headers(response: Response) -> None:
    # Starlette answers unhandled errors outside every middleware, so the headers are added here.
    for name, value in [*HEADERS, (b"cache-control", b"no-store")]:
        response.headers[name.decode()] = value.decode()
