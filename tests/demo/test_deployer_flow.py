"""The seed's deploy example end to end: agent -> console -> deployer (stdio and HTTP) -> person -> result."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select, update

from console.audit.models import AuditEvent
from console.calls.models import CallRound
from console.db import create_engine, session_factory
from tests.harness import ServerSpec, result_text, running_console, stdio_deployer
from tests.processes import ServerProcess

pytestmark = pytest.mark.anyio

ARGS = {"service": "auth-service"}
PRODUCTION = {"environment": "production", "confirm": True}


@pytest.fixture(params=["stdio", "http"])
def deployer(request: pytest.FixtureRequest, state_key: str, deployer_http: ServerProcess) -> ServerSpec:
    if request.param == "stdio":
        return stdio_deployer(state_key)
    return ServerSpec(url=deployer_http.url)


async def test_deploy_waits_for_a_person_and_then_deploys(database_url: str, deployer: ServerSpec) -> None:
    async with running_console(database_url, {"deployer": deployer}) as console:
        call = await console.call("deployer", "deploy", ARGS)
        assert call["status"] == "awaiting_input"
        [question] = call["pending"]
        assert question["key"] == "target"
        assert question["message"] == "auth-service in version 2.4.1 — deploy where?"
        done = await console.answer_and_settle(call, "accept", PRODUCTION)
        assert result_text(done) == "auth-service 2.4.1 is being deployed to production."


@pytest.mark.parametrize(
    ("action", "content", "expected"),
    [
        ("decline", None, "Deployment not started (decline)."),
        ("cancel", None, "Deployment not started (cancel)."),
        ("accept", {"environment": "staging", "confirm": False}, "No deployment without confirmation."),
    ],
)
async def test_deploy_outcomes_other_than_accept_are_normal_results(
    database_url: str, deployer: ServerSpec, action: str, content: dict[str, object] | None, expected: str
) -> None:
    async with running_console(database_url, {"deployer": deployer}) as console:
        call = await console.call("deployer", "deploy", ARGS)
        done = await console.answer_and_settle(call, action, content)
        assert result_text(done) == expected
        assert done["result"].get("isError") in (None, False)


async def test_tampered_state_is_rejected_and_the_call_restarts_with_the_same_answer(
    database_url: str, deployer: ServerSpec
) -> None:
    async with running_console(database_url, {"deployer": deployer}) as console:
        call = await console.call("deployer", "deploy", ARGS)
        await _tamper_with_state(database_url, call["id"])
        done = await console.answer_and_settle(call, "accept", PRODUCTION)
        assert result_text(done) == "auth-service 2.4.1 is being deployed to production."
        rounds, actions = await _rounds_and_actions(database_url, call["id"])
    rejected = json.loads(rounds[0].error_json or "{}")
    assert rejected["code"] == -32602
    assert rejected["data"] == {"reason": "invalid_request_state"}
    assert "tampered" in rejected["message"] or "signature" in rejected["message"]
    assert [r.status for r in rounds] == ["superseded", "answered"]
    assert actions.count("question_answered") == 1  # one human answer, re-applied once
    assert "state_rejected_restart" in actions
    assert "answer_reapplied" in actions


async def _tamper_with_state(database_url: str, call_id: str) -> None:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            round_ = (
                await session.execute(select(CallRound).where(CallRound.call_id == call_id))
            ).scalar_one()
            state: str = json.loads(round_.request_state_json or "null")
            body, _, mac = state.partition(".")
            forged = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1] + "." + mac
            await session.execute(
                update(CallRound)
                .where(CallRound.id == round_.id)
                .values(request_state_json=json.dumps(forged))
            )
            await session.commit()
    finally:
        await engine.dispose()


async def _rounds_and_actions(database_url: str, call_id: str) -> tuple[list[CallRound], list[str]]:
    engine = create_engine(database_url)
    try:
        async with session_factory(engine)() as session:
            rounds = (
                (
                    await session.execute(
                        select(CallRound).where(CallRound.call_id == call_id).order_by(CallRound.n)
                    )
                )
                .scalars()
                .all()
            )
            actions = (
                (
                    await session.execute(
                        select(AuditEvent.action)
                        .where(AuditEvent.call_id == call_id)
                        .order_by(AuditEvent.seq)
                    )
                )
                .scalars()
                .all()
            )
            return list(rounds), list(actions)
    finally:
        await engine.dispose()
