"""`/.well-known/jwks.json`: the public keys MCP servers verify approval attestations with (public)."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response

from console.attestation import Attester, jwks
from console.web.deps import RuntimeDep

router = APIRouter()

CACHE_SECONDS = 300


def key_set_body(attester: Attester | None) -> bytes:
    """The JWK Set document of the console's attestation key and of the keys it replaced; no keys when
    attestations are off."""
    return json.dumps(jwks() if attester is None else attester.key_set(), separators=(",", ":")).encode()


@router.get("/.well-known/jwks.json", include_in_schema=False)
async def key_set(runtime: RuntimeDep) -> Response:
    return Response(
        runtime.jwks_body,
        media_type="application/json",
        headers={"Cache-Control": f"public, max-age={CACHE_SECONDS}"},
    )
