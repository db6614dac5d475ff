"""Request-scoped dependencies: the console's runtime, the DB session, settings, the bearer principal;
reading bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, TypeVar

from fastapi import Depends, Request
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from console.calls.wellformed import parse_json
from console.config import Settings
from console.errors import InvalidInput, Unauthorized
from console.identity import Principal, authenticate_token
from console.runtime import Runtime, runtime_of
from console.transactions import commit, commit_if_kept

M = TypeVar("M", bound=BaseModel)


# async: FastAPI runs a plain function dependency on a worker thread, a thread hop per request
async def runtime(request: Request) -> Runtime:
    """What the app keeps (console/runtime.py), for the route that asks for `RuntimeDep`."""
    return runtime_of(request.app)


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    """The request's session. The route ends its unit of work with `console.transactions.commit`; a
    refusal raised with `keep_only` or `keep_writes` commits its record here, before the error is
    answered."""
    async with runtime_of(request.app).factory() as session:
        try:
            yield session
        except BaseException as error:
            await commit_if_kept(session, error)
            raise


async def get_settings(request: Request) -> Settings:
    return runtime_of(request.app).settings


async def get_principal(
    request: Request, session: Annotated[AsyncSession, Depends(get_session)]
) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send an API token as 'Authorization: Bearer <token>'")
    principal = await authenticate_token(session=session, token=token.strip())
    await commit(session)  # its unit: when the token was last used, and the read ended
    return principal


async def read_body(request: Request) -> str:
    """The request body as text; `BodyLimits` refuses it (413) once it passes its route's cap."""
    try:
        return (await request.body()).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("request body is not UTF-8", {"body": "is not UTF-8"}) from None


async def read_model(request: Request, model: type[M], what: str) -> M:
    """The JSON body as `model`; read only when called, so only after the route's dependencies.

    Raises:
        InvalidInput: naming each field that is wrong (`body` when it is not JSON at all).
    """
    value = parse_json(await read_body(request), what)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        fields = {".".join(str(p) for p in e["loc"]) or "body": e["msg"] for e in exc.errors()}
        raise InvalidInput(f"invalid {what}", fields) from None


async def form_fields(request: Request, **max_lengths: int) -> dict[str, str]:
    """The named fields of a posted form that are present, each at most its maximum length.

    Routes call this after their sign-in and CSRF dependencies: FastAPI parses `Form()` parameters
    before any dependency runs, so a route declaring them would read the body of anyone at all.

    Raises:
        InvalidInput: a field is longer than its maximum.
    """
    form = await request.form()
    fields = {name: value for name in max_lengths if isinstance(value := form.get(name), str)}
    errors = {
        name: f"must be at most {max_lengths[name]} characters"
        for name, value in fields.items()
        if len(value) > max_lengths[name]
    }
    if errors:
        raise InvalidInput("invalid form", errors)
    return fields


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI `requestBody` of a route that reads its body itself (see `read_model`)."""
    schema = {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}
    return {"requestBody": schema}


API_TOKEN = HTTPBearer(
    auto_error=False,
    scheme_name="API token",
    description="A console API token (the API tokens page, or `console tokens create`), sent as "
    "`Authorization: Bearer <token>`.",
)

RuntimeDep = Annotated[Runtime, Depends(runtime)]
DbSession = Annotated[AsyncSession, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
