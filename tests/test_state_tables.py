"""The statuses of calls, rounds, questions, agent requests, outbox jobs, deliveries and notices move only as
their tables allow (console/calls/states.py, console/notify/states.py): each table is walked, no code
writes one of those statuses but through its move helpers, nor compares one with a bare string, and a
row that ended cannot be moved back, whether it is changed loaded or by an UPDATE."""

from __future__ import annotations

import ast
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from console.calls.models import CallRound, DispatchJob, Elicitation
from console.calls.moves import job_may_become, move_job, move_question, move_round, round_may_become
from console.calls.states import (
    AGENT_REQUESTS,
    CALLS,
    JOBS,
    QUESTIONS,
    ROUNDS,
    JobStatus,
    QuestionStatus,
    RoundStatus,
)
from console.notify.states import DELIVERIES, NOTICES
from console.transactions import transaction
from console.transitions import IllegalMove, Moves
from tests.harness import Mrtr, running_console

pytestmark = pytest.mark.anyio

CONSOLE = Path(__file__).resolve().parents[1] / "console"
TABLES: list[Moves[Any]] = [CALLS, ROUNDS, QUESTIONS, AGENT_REQUESTS, JOBS, DELIVERIES, NOTICES]

MOVERS = {"console/calls/moves.py", "console/notify/moves.py", "console/transitions.py"}
# The values a status column of the console holds; a bare string of one of them is a status by hand.
ENUMS: list[type[StrEnum]] = [type(table.start) for table in TABLES]
STATUS_VALUES = {status.value for enum in ENUMS for status in enum}
# Not a status of the console's rows here: the server's own task status (console/mcp/tasks.py), and a
# call's status as text where console/notify, below console/calls, renders it.
NOT_OURS = {"reply", "facts"}


def reachable(table: Moves[Any], start: StrEnum) -> set[StrEnum]:
    seen, todo = {start}, [start]
    while todo:
        for after in table.moves[todo.pop()]:
            if after not in seen:
                seen.add(after)
                todo.append(after)
    return seen


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.what)
def test_each_table_names_every_state_reaches_each_from_the_start_and_an_end_from_each(
    table: Moves[Any],
) -> None:
    enum: type[StrEnum] = type(table.start)
    states = set(enum)
    assert set(table.moves) == states
    assert reachable(table, table.start) == states
    assert table.final
    assert all(not table.moves[status] for status in table.final)
    assert all(reachable(table, status) & table.final for status in states)


def test_what_ended_stays_ended() -> None:
    assert ROUNDS.final == {RoundStatus.ANSWERED, RoundStatus.SUPERSEDED}
    assert QUESTIONS.final == set(QuestionStatus) - {QuestionStatus.PENDING}
    assert JOBS.final == {JobStatus.DONE}
    # an interrupted job goes out again only when a person sends its call again
    assert JOBS.moves[JobStatus.INTERRUPTED] == {JobStatus.READY}
    # nothing is sent for a round twice: only a ready round's resume goes out
    assert ROUNDS.sources_of(RoundStatus.SENT) == (RoundStatus.READY,)


def _is_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in STATUS_VALUES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_literal(element) for element in node.elts)
    return False


def _status_of(node: ast.AST) -> bool:
    """An `x.status` (or a table's `x.c.status`) of one of the console's rows."""
    return (
        isinstance(node, ast.Attribute) and node.attr == "status" and ast.unparse(node.value) not in NOT_OURS
    )


def _offences(tree: ast.AST) -> list[str]:
    """Status writes not made through a move helper, and statuses compared with bare strings."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = [
                t
                for target in node.targets
                for t in (target.elts if isinstance(target, ast.Tuple) else [target])
            ]
            if any(_status_of(target) for target in targets):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg == "status" and _is_literal(keyword.value):
                    found.append(f"line {node.lineno}: status={ast.unparse(keyword.value)}")
            sets_status = any(keyword.arg == "status" for keyword in node.keywords)
            is_values = isinstance(node.func, ast.Attribute) and node.func.attr == "values"
            if is_values and sets_status and "may_become(" not in ast.unparse(node):
                found.append(f"line {node.lineno}: an UPDATE of a status without may_become")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_status_of(side) for side in sides) and any(_is_literal(side) for side in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("in_", "not_in")
            and _status_of(node.func.value)
            and any(_is_literal(arg) for arg in node.args)
        ):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_writes_a_status_but_through_its_table_nor_compares_one_with_a_bare_string() -> None:
    offending: dict[str, list[str]] = {}
    for path in CONSOLE.rglob("*.py"):
        name = str(path.relative_to(CONSOLE.parent))
        if name in MOVERS:
            continue
        found = _offences(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offending[name] = found
    assert offending == {}


async def test_an_answered_round_its_question_and_its_done_job_cannot_be_moved_back(
    sqlite_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(sqlite_url, {"mrtr": mrtr_memory.spec}) as console:
        asked = await console.call("mrtr", "signed", {"item": "once"})
        done = await console.answer_and_settle(asked, "accept", {"ok": True})
        assert done["status"] == "completed"
        async with transaction(console.runtime.factory) as session:
            round_ = (
                await session.execute(select(CallRound).where(CallRound.call_id == done["id"]))
            ).scalar_one()
            question = (
                await session.execute(select(Elicitation).where(Elicitation.round_id == round_.id))
            ).scalar_one()
            job = (
                await session.execute(select(DispatchJob).where(DispatchJob.round_id == round_.id))
            ).scalar_one()
            assert (round_.status, question.status, job.status) == ("answered", "accepted", "done")
            with pytest.raises(IllegalMove, match="may not move from answered to ready"):
                move_round(round_, RoundStatus.READY)
            with pytest.raises(IllegalMove, match="may not move from accepted to expired"):
                move_question(question, QuestionStatus.EXPIRED)
            with pytest.raises(IllegalMove, match="may not move from done to ready"):
                move_job(job, JobStatus.READY)
            sent = update(CallRound).where(CallRound.id == round_.id, round_may_become(RoundStatus.SENT))
            claimed = update(DispatchJob).where(DispatchJob.id == job.id, job_may_become(JobStatus.CLAIMED))
            for moved in (
                await session.execute(sent.values(status=RoundStatus.SENT)),
                await session.execute(claimed.values(status=JobStatus.CLAIMED)),
            ):
                assert moved.rowcount == 0  # type: ignore[attr-defined]  # CursorResult of an UPDATE
            await session.commit()
        again = await console.get_call(done["id"])
        assert again["status"] == "completed"
