"""The live inbox's fingerprint moves with every question that arrives or is decided, one whose decision
commits after a later-stamped one included, and stays put while nothing changes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from console.calls.models import Elicitation
from console.elicitations.service import inbox_fingerprint
from console.identity import Viewer
from console.identity.models import Team
from tests.harness import TEAM, Console, running_console, stdio_mrtr, user_id

pytestmark = pytest.mark.anyio


async def _fingerprint(console: Console, viewer: Viewer) -> tuple[object, ...]:
    async with console.app.state.factory() as session:
        return await inbox_fingerprint(session=session, viewer=viewer)


async def test_the_fingerprint_moves_with_arrivals_and_decisions_even_late_ones_and_only_then(
    database_url: str, tmp_path: Path
) -> None:
    async with running_console(database_url, {"mrtr": stdio_mrtr(tmp_path / "requests.jsonl")}) as console:
        async with console.app.state.factory() as session:
            team_id = (await session.execute(select(Team.id).where(Team.name == TEAM))).scalar_one()
        viewer = Viewer(user_id=await user_id(console, "lead"), user_name="lead", roles={team_id: "approver"})
        empty = await _fingerprint(console, viewer)
        assert await _fingerprint(console, viewer) == empty

        first = await console.call("mrtr", "two_rounds", {"topic": "first"})
        second = await console.call("mrtr", "two_rounds", {"topic": "second"})
        asked = await _fingerprint(console, viewer)
        assert asked != empty

        await console.answer_and_settle(second, "accept", {"name": "Ada"})  # its next round asks again
        settled = await _fingerprint(console, viewer)
        assert settled != asked
        assert await _fingerprint(console, viewer) == settled

        # The first question decided with a stamp older than the newest decision, as when its
        # transaction commits after a later-stamped one: neither newest stamp moves.
        async with console.app.state.factory() as session:
            newest = (await session.execute(select(func.max(Elicitation.decided_at)))).scalar_one()
            await session.execute(
                update(Elicitation)
                .where(Elicitation.id == first["pending"][0]["id"])
                .values(status="declined", decided_at=newest - timedelta(seconds=1))
            )
            await session.commit()
        assert await _fingerprint(console, viewer) != settled
