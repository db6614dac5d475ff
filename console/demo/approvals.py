"""How the demo deployer checks that people approved a production deploy in the console: the approval
attestation in the request's `_meta` (console/attestation.py), against the keys the console publishes
at the URL in DEPLOY_REQUIRE_APPROVAL_JWKS. A server author's copy of this needs only that module."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import anyio
import httpx

from console.attestation import AttestationRefused, UnknownKey, UsedAttestations, verify

REFETCH_SECONDS = 5.0  # an unknown key id fetches the keys again (a rotation), at most this often
FETCH_TIMEOUT_SECONDS = 5.0
REQUIRED_APPROVERS = 2  # distinct people, not the requester


class ApprovalCheck:
    """Verifies attestations one console (`issuer`) made for this server (`audience`): each by at least
    REQUIRED_APPROVERS people other than the requester, each accepted once (replays are refused)."""

    def __init__(self, jwks_url: str, *, issuer: str, audience: str) -> None:
        self.jwks_url, self.issuer, self.audience = jwks_url, issuer, audience
        self._keys: dict[str, Any] = {"keys": []}
        self._fetched_at = float("-inf")
        self._lock = anyio.Lock()
        self._used = UsedAttestations()

    async def refusal(
        self,
        meta: Mapping[str, Any] | None,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        kind: str,
        now: datetime,
    ) -> str | None:
        """Why the request is not a call of `tool` with `arguments` that people approved as `kind` says
        (at the console's gate, or by answering this server's question), or None when it is."""
        params = {"name": tool, "arguments": dict(arguments)}

        def check() -> None:
            verify(
                meta,
                self._keys,
                params,
                issuer=self.issuer,
                audience=self.audience,
                method="tools/call",
                kind=kind,
                min_approvers=REQUIRED_APPROVERS,
                now=now,
                seen=self._used,
            )

        try:
            try:
                check()
            except UnknownKey:
                await self._refetch()
                check()
        except AttestationRefused as exc:
            return exc.reason
        except (httpx.HTTPError, ValueError) as exc:
            return f"the console's keys could not be fetched from {self.jwks_url} ({exc})"
        return None

    async def _refetch(self) -> None:
        async with self._lock:
            if time.monotonic() - self._fetched_at < REFETCH_SECONDS:
                return
            self._fetched_at = time.monotonic()
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as client:
                response = await client.get(self.jwks_url)
                response.raise_for_status()
                body = response.json()
            if not isinstance(body, dict) or not isinstance(body.get("keys"), list):
                raise ValueError("not a JWK set")
            self._keys = body
