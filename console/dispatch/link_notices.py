"""A server's `notifications/elicitation/complete` for a link it required earlier with -32042.

The notice arrives on the server's connection after the reply that required the link, outside any
request: the dispatcher that recorded that reply remembers which call each elicitationId belongs to on
that endpoint, and the notice accepts the link question as done by the server (the request goes out
again once every link of its round is done). A notice this process does not expect (another process
sent the request, or it restarted since) changes nothing: the owner says the link is done instead.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import anyio
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from console.background import is_database_error
from console.calls.links.required import required_link_ids
from console.calls.replies.outcomes import complete_link
from console.dispatch.signals import Signals
from console.errors import McpError
from console.mcp.endpoint import Endpoint
from console.transactions import transaction

logger = logging.getLogger(__name__)
MAX_AWAITED = 1000  # the oldest expected notices are forgotten past this


@dataclass
class AwaitedLinks:
    factory: async_sessionmaker[AsyncSession]
    signals: Signals
    _awaited: dict[tuple[str, Endpoint], str] = field(default_factory=dict)

    def expect(self, endpoint: Endpoint, error: McpError, call_id: str) -> None:
        """The call's server at `endpoint` required the links of `error`: it may say when each is done."""
        for elicitation_id in required_link_ids(error):
            self._awaited[(elicitation_id, endpoint)] = call_id
        while len(self._awaited) > MAX_AWAITED:
            del self._awaited[next(iter(self._awaited))]

    async def done(self, endpoint: Endpoint, elicitation_id: str) -> None:
        """The server at `endpoint` says the link `elicitation_id` is done."""
        call_id = self._awaited.pop((elicitation_id, endpoint), None)
        if call_id is None:
            return
        try:
            with anyio.CancelScope(shield=True):
                async with transaction(self.factory) as session:
                    closed = await complete_link(
                        session=session, call_id=call_id, elicitation_id=elicitation_id, held=False
                    )
        except Exception as error:
            if not is_database_error(error):
                raise
            logger.warning(
                "call %s: a link's done notice is lost (%s)", call_id, error, extra={"call_id": call_id}
            )
            return
        if closed:
            self.signals.work_available()
            self.signals.call_changed(call_id)
