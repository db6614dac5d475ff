"""The latest progress a server reports for a call, kept on the call for the run page and the API.

Each notification goes at once to whoever in this process follows the call (the MCP gateway); the
database gets at most one write a second while the request is out, and the latest state whenever the
call's own transactions touch it (`keep`: when it stops to wait, while a held request waits, when it
ends), so a server that floods progress cannot flood the database. Each state is numbered within its
request, and a write never replaces a later state of the same request with an earlier one (notifications
and the call's transactions race); a call's requests go out one after another, so a later request's
states replace an earlier one's.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls.models import Call
from console.calls.server_reports.kept import Throttle, keep_on_call
from console.db import utcnow
from console.mcp.endpoint import Progress

MAX_MESSAGE_CHARS = 500  # a progress message is untrusted text shown on the run page


@dataclass
class ProgressRecorder:
    """The `on_progress` of one sent request."""

    factory: async_sessionmaker[AsyncSession]
    call_id: str
    job_id: str  # the request's
    relay: Progress
    latest: str | None = None
    seq: int = 0
    throttle: Throttle = field(default_factory=Throttle)

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        await self.relay(progress, total, message)
        self.seq += 1
        self.latest = _progress_json(self.job_id, self.seq, progress, total, message)
        if self.throttle.due():
            await keep_on_call(self.factory, self.call_id, self.keep)

    def keep(self, call: Call) -> bool:
        """Put the latest progress on the call (its row locked by the caller's transaction) unless it
        already holds that state or a later one; whether it changed."""
        stored = call.progress
        if self.latest is None:
            return False
        if stored is not None and stored.get("job") == self.job_id and stored.get("seq", 0) >= self.seq:
            return False
        call.progress_json = self.latest
        return True


def _progress_json(job_id: str, seq: int, progress: float, total: float | None, message: str | None) -> str:
    return json.dumps(
        {
            "job": job_id,
            "seq": seq,
            "progress": progress if math.isfinite(progress) else None,
            "total": total if total is not None and math.isfinite(total) else None,
            "message": message[:MAX_MESSAGE_CHARS] if message else None,
            "at": utcnow().isoformat(),
        }
    )
