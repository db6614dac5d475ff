"""The console's own `requestState` for questions it offers to a 2026-07-28 agent: which console call
and which questions, sealed (AES-GCM) so that it opens only for the person whose token got it.

The upstream server's own state never leaves the console; an agent's retry names the console call.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import time
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PREFIX = "console.v1."


class StateRefused(ValueError):
    """The state is not one this console sealed for this caller, or it expired."""


@dataclass(frozen=True)
class OfferedState:
    call_id: str
    questions: dict[str, str]  # the agent's inputRequests keys: the questions' ids ...
    expires_at: float  # seconds since the epoch
    requests: dict[str, str]  # ... and the server's sampling or roots requests' ids


class StateSeal:
    """Seals with a key derived from the console secret; without one, with a key of this process only
    (a state then does not outlive a restart, and the agent is asked again)."""

    def __init__(self, console_secret: str | None) -> None:
        material = console_secret.encode() if console_secret else secrets.token_bytes(32)
        key = HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"approval-console/gateway-state/v1"
        ).derive(material)
        self._aead = AESGCM(key)

    def seal(self, state: OfferedState, *, bound_to: str) -> str:
        body = json.dumps(
            {
                "call": state.call_id,
                "questions": state.questions,
                "requests": state.requests,
                "exp": state.expires_at,
            }
        ).encode()
        nonce = secrets.token_bytes(12)
        sealed = self._aead.encrypt(nonce, body, bound_to.encode())
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")

    def open(self, text: str, *, bound_to: str) -> OfferedState:
        """Raises: StateRefused."""
        if not text.startswith(PREFIX):
            raise StateRefused("this requestState was not issued by the console")
        raw = text.removeprefix(PREFIX)
        try:
            blob = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
            body = json.loads(self._aead.decrypt(blob[:12], blob[12:], bound_to.encode()))
            state = OfferedState(
                str(body["call"]),
                {str(key): str(q) for key, q in body["questions"].items()},
                float(body["exp"]),
                {str(key): str(r) for key, r in body["requests"].items()},
            )
        except (InvalidTag, ValueError, binascii.Error, KeyError, TypeError, AttributeError) as exc:
            raise StateRefused("this requestState is not valid for this caller") from exc
        if state.expires_at < time.time():
            raise StateRefused("this requestState has expired")
        return state
