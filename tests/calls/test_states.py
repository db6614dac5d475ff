"""A call's states move only as the one table allows (console/calls/states.py): the table itself is walked
(tests/test_state_tables.py walks it with the others and finds any status written by hand), and a call
that ended cannot be made to run again, whether a loaded call is changed or a plain UPDATE is sent."""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from console.calls.models import Call
from console.calls.moves import may_become, move_call
from console.calls.states import CALL_MOVES, FINAL, GOING, START, TERMINAL, CallStatus
from console.transactions import transaction
from console.transitions import IllegalMove
from tests.harness import Mrtr, running_console

pytestmark = pytest.mark.anyio


def reachable(start: CallStatus) -> set[CallStatus]:
    seen, todo = {start}, [start]
    while todo:
        for after in CALL_MOVES[todo.pop()]:
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


def test_the_table_names_every_state_reaches_each_from_the_start_and_an_end_from_each() -> None:
    assert set(CALL_MOVES) == set(CallStatus)
    assert reachable(START) == set(CallStatus)
    assert all(reachable(status) & FINAL for status in CallStatus)
    assert {
        CallStatus.COMPLETED,
        CallStatus.FAILED,
        CallStatus.ABANDONED,
        CallStatus.DECLINED,
        CallStatus.CANCELLED,
    } == FINAL
    # an interrupted call only goes on when its request is sent again, or ends abandoned
    assert CALL_MOVES[CallStatus.INTERRUPTED] == {CallStatus.RESUMING, CallStatus.ABANDONED}
    # declining or cancelling is a person's answer to a question, so it comes only while one waits
    answered = {CallStatus.DECLINED, CallStatus.CANCELLED}
    assert {status for status, moves in CALL_MOVES.items() if moves & answered} == {CallStatus.AWAITING_INPUT}
    assert set(TERMINAL) == set(CallStatus) - GOING


async def test_a_completed_call_cannot_be_moved_back_by_an_object_or_a_statement(
    sqlite_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(sqlite_url, {"mrtr": mrtr_memory.spec}) as console:
        done = await console.call("mrtr", "complete_now", {"x": "once"})
        assert done["status"] == "completed"
        async with transaction(console.runtime.factory) as session:
            call = (await session.execute(select(Call).where(Call.id == done["id"]))).scalar_one()
            with pytest.raises(IllegalMove, match="may not move from completed to resuming"):
                move_call(call, CallStatus.RESUMING)
            assert call.status == "completed"
            for target in (CallStatus.RUNNING, CallStatus.RESUMING, CallStatus.ABANDONED):
                moved = await session.execute(
                    update(Call).where(Call.id == done["id"], may_become(target)).values(status=target)
                )
                assert moved.rowcount == 0  # type: ignore[attr-defined]  # CursorResult of an UPDATE
            await session.commit()
        again = await console.get_call(done["id"])
        assert again["status"] == "completed"
