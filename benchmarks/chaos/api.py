"""One person's (or agent's) client of the console's API through the proxy, retrying lost responses.

A lost response is a connection that failed or closed before the answer came (its process was killed),
or a 5xx. The request is sent again, unchanged and with the same Idempotency-Key, until an answer comes
or `GIVE_UP` seconds have passed.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import anyio
import httpx

WAIT = 20.0  # the long-poll of one request, in seconds
GIVE_UP = 120.0  # how long one request is retried before it counts as lost for good
BACKOFF = (0.05, 0.5)  # a lost response is retried after a random pause in this range


class LostForGood(Exception):
    """A request whose responses were lost for GIVE_UP seconds."""


@dataclass
class Tally:
    lost_responses: int = 0  # connections that broke before the answer
    server_errors: int = 0  # 5xx answers


class Api:
    def __init__(self, base_url: str, token: str, tally: Tally, rng: random.Random) -> None:
        self._http = httpx.AsyncClient(
            base_url=f"{base_url}/api/v1",
            headers={"Authorization": f"Bearer {token}"},
            timeout=WAIT + 40,
            # A connection per request: the proxy spreads connections, so that spreads requests.
            limits=httpx.Limits(max_keepalive_connections=0),
        )
        self._tally = tally
        self._rng = rng

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> httpx.Response:
        """The first answer that is not a 5xx (the same request, sent again while responses are lost).

        Raises:
            LostForGood: no answer for GIVE_UP seconds.
        """
        headers = {"Idempotency-Key": key} if key is not None else {}
        deadline = time.monotonic() + GIVE_UP
        while True:
            try:
                response = await self._http.request(method, path, json=body, params=params, headers=headers)
            except httpx.TransportError:
                self._tally.lost_responses += 1
            else:
                if response.status_code < 500:
                    return response
                self._tally.server_errors += 1
            if time.monotonic() > deadline:
                raise LostForGood(f"{method} {path}")
            await anyio.sleep(self._rng.uniform(*BACKOFF))
