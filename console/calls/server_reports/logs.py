"""The latest log messages a server sends while a call's request is out, kept on the call for the run page
and the API (its newest `MAX_ENTRIES`, with a count of those dropped before them).

Each message goes at once to whoever in this process follows the call's logs (the MCP gateway, filtered
by the level each asked for); the database gets what arrived at most once a second while the request is
out, and the rest whenever the call's own transactions touch it (`keep`), as progress does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.calls.models import Call
from console.calls.server_reports.kept import Throttle, keep_on_call
from console.db import utcnow
from console.mcp.endpoint import LOG_LEVELS, LogSink

MAX_ENTRIES = 50
MAX_MESSAGE_CHARS = 1000  # a log message is untrusted text shown on the run page
MAX_LOGGER_CHARS = 100


@dataclass
class LogRecorder:
    """The `on_log` of one sent request."""

    factory: async_sessionmaker[AsyncSession]
    call_id: str
    relay: LogSink
    level: str | None  # the least severe level the call keeps; None: it keeps none
    unwritten: list[dict[str, Any]] = field(default_factory=list)
    lost: int = 0  # arrived and pushed out by newer ones before they were written
    throttle: Throttle = field(default_factory=Throttle)

    async def __call__(self, level: str, data: Any, logger: str | None) -> None:
        await self.relay(level, data, logger)
        if not self._wants(level):
            return
        self.unwritten.append(_entry(level, data, logger))
        self.lost += max(0, len(self.unwritten) - MAX_ENTRIES)
        del self.unwritten[:-MAX_ENTRIES]
        if self.throttle.due():
            await keep_on_call(self.factory, self.call_id, self.keep)

    def keep(self, call: Call) -> bool:
        """Add what arrived since the last write to the call's messages (its row locked by the caller's
        transaction), keeping the newest; whether there was any."""
        if not self.unwritten:
            return False
        stored = call.logs
        entries = [*stored["entries"], *self.unwritten]
        dropped = stored["dropped"] + self.lost + max(0, len(entries) - MAX_ENTRIES)
        call.logs_json = json.dumps({"entries": entries[-MAX_ENTRIES:], "dropped": dropped})
        self.unwritten.clear()
        self.lost = 0
        return True

    def _wants(self, level: str) -> bool:
        return (
            self.level is not None
            and level in LOG_LEVELS
            and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.level)
        )


def _entry(level: str, data: Any, logger: str | None) -> dict[str, Any]:
    message = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return {
        "level": level,
        "logger": logger[:MAX_LOGGER_CHARS] if isinstance(logger, str) and logger else None,
        "message": message[:MAX_MESSAGE_CHARS],
        "at": utcnow().isoformat(),
    }
