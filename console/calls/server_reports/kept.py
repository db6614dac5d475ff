"""Writing what a server reports while a request is out (progress, logs) onto the call: at most once a
second as it arrives, so a server that floods reports cannot flood the database, under the row's lock."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls.models import Call
from console.transactions import transaction

WRITE_SECONDS = 1.0


@dataclass
class Throttle:
    written_at: float = -math.inf

    def due(self) -> bool:
        """Whether a write may go now (and then the next one only a second later)."""
        if anyio.current_time() - self.written_at < WRITE_SECONDS:
            return False
        self.written_at = anyio.current_time()
        return True


async def keep_on_call(
    factory: async_sessionmaker[AsyncSession], call_id: str, keep: Callable[[Call], bool]
) -> None:
    """Let `keep` change the call in a transaction of its own that holds the row's lock (a `keep` that
    changes nothing returns False; the lock is let go all the same)."""
    with anyio.CancelScope(shield=True):
        async with transaction(factory) as session:
            query = select(Call).where(Call.id == call_id).with_for_update()
            keep((await session.execute(query)).scalar_one())
