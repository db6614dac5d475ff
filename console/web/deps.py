"""Request-scoped dependencies: the DB session, settings, the bearer principal, bounded bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from console.config import Settings
from console.errors import InvalidInput, PayloadTooLarge, Unauthorized
from console.identity import Principal, authenticate_token

ANSWER_BODY_LIMIT = 1024 * 1024


async def get_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.factory() as session:
        yield session


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_principal(
    request: Request, session: Annotated[AsyncSession, Depends(get_session)]
) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("send an API token as 'Authorization: Bearer <token>'")
    return await authenticate_token(session=session, token=token.strip())


async def read_body(request: Request, limit: int) -> str:
    """The request body as text, refusing more than `limit` bytes without reading them all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"request body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"request body is larger than {limit} bytes")
        chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("request body is not UTF-8") from None


DbSession = Annotated[AsyncSession, Depends(get_session)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
