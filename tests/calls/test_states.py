"""A call's states move only as the one table allows (console/calls/states.py): the table itself is walked,
no code changes a call's status except through it, and a call that ended cannot be made to run again,
whether a loaded call is changed or a plain UPDATE is sent."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from sqlalchemy import select, update

from console.calls.models import Call
from console.calls.moves import may_become, move_call
from console.calls.states import CALL_MOVES, FINAL, GOING, START, TERMINAL, CallStatus
from console.transactions import transaction
from console.transitions import IllegalMove
from tests.harness import Mrtr, running_console

pytestmark = pytest.mark.anyio

CONSOLE = Path(__file__).resolve().parents[2] / "console"


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


def _status_writes(tree: ast.AST) -> list[str]:
    """Assignments to an `X.status` where X is a call, and UPDATEs of the call table that set a status
    without `may_become` in their conditions."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [
                t
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "status":
                    owner = ast.unparse(target.value)
                    if owner == "call" or owner.endswith(".call"):
                        found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "values":
            text = ast.unparse(node)
            sets_status = any(keyword.arg == "status" for keyword in node.keywords)
            of_calls = "update(Call)" in text or "update(_CALLS)" in text
            if sets_status and of_calls and "may_become(" not in text:
                found.append(f"line {node.lineno}: an UPDATE of call without may_become")
    return found


def test_no_code_changes_a_calls_status_but_through_the_table() -> None:
    offending: dict[str, list[str]] = {}
    for path in CONSOLE.rglob("*.py"):
        if path == CONSOLE / "calls" / "moves.py":
            continue
        found = _status_writes(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offending[str(path.relative_to(CONSOLE.parent))] = found
    assert offending == {}


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
