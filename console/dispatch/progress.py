"""The latest progress a server reports for a call, kept on the call for the run page and the API.

Each notification goes at once to whoever in this process follows the call (the MCP gateway); the
database gets at most one write a second while the request is out, and the latest state whenever the
call stops to wait or ends (`keep`), so a server that floods progress cannot flood the database.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import anyio
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls.models import Call
from console.db import utcnow
from console.mcp.endpoint import Progress

WRITE_SECONDS = 1.0
MAX_MESSAGE_CHARS = 500  # a progress message is untrusted text shown on the run page


@dataclass
class ProgressRecorder:
    """The `on_progress` of one sent request."""

    factory: async_sessionmaker[AsyncSession]
    call_id: str
    relay: Progress
    latest: str | None = None
    written_at: float = -math.inf

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await self.relay(progress, total, message)
        self.latest = _progress_json(progress, total, message)
        if anyio.current_time() - self.written_at < WRITE_SECONDS:
            return
        self.written_at = anyio.current_time()
        with anyio.CancelScope(shield=True):
            async with self.factory() as session:
                await session.execute(
                    update(Call).where(Call.id == self.call_id).values(progress_json=self.latest)
                )
                await session.commit()

    def keep(self, call: Call) -> None:
        """Put the latest progress on the call, in the caller's transaction."""
        if self.latest is not None:
            call.progress_json = self.latest


def _progress_json(progress: float, total: float | None, message: str | None) -> str:
    return json.dumps(
        {
            "progress": progress if math.isfinite(progress) else None,
            "total": total if total is not None and math.isfinite(total) else None,
            "message": message[:MAX_MESSAGE_CHARS] if message else None,
            "at": utcnow().isoformat(),
        }
    )
