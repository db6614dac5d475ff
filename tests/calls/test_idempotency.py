"""Idempotency keys on the agent API: an agent that retries a request whose answer it lost (same
`Idempotency-Key`, same body) gets the first request's run, call or answer back, and the MCP server is
asked once; the same key with another body is refused; two requests with one key at once make one call;
keys belong to their person and lapse after 24 hours.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy import select

from console.calls.models import Call, Run
from console.identity.models import IdempotentRequest
from tests.harness import TEAM, Console, memory_mrtr, running_console
from tests.processes import read_log

pytestmark = pytest.mark.anyio

TOOL = {"server": "mrtr", "method": "tools/call", "params": {"name": "complete_now", "arguments": {"x": "a"}}}


def keyed(console: Console, key: str, who: str = "dev") -> dict[str, str]:
    return {**console.auth(who), "Idempotency-Key": key}


async def calls_in(console: Console, run_id: str) -> list[str]:
    async with console.runtime.factory() as session:
        return list((await session.execute(select(Call.id).where(Call.run_id == run_id))).scalars())


def tool_calls(log: Path) -> int:
    """How many calls of complete_now the MCP server received."""
    return sum(1 for entry in read_log(log) if entry["name"] == "complete_now")


async def post_call(
    console: Console, run_id: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    return await console.client.post(
        f"/api/v1/runs/{run_id}/calls", params={"wait": 20}, json=body, headers=headers
    )


async def test_a_retried_call_with_its_key_gets_the_first_call_and_the_server_runs_it_once(
    database_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        run_id = await console.new_run()
        first = await post_call(console, run_id, TOOL, keyed(console, "deploy-1"))
        assert first.status_code == 200, first.text
        again = await post_call(console, run_id, TOOL, keyed(console, "deploy-1"))
        assert again.status_code == 200, again.text
        assert again.json() == first.json()
        assert await calls_in(console, run_id) == [first.json()["id"]]
        assert tool_calls(log) == 1

        other = dict(TOOL, params={"name": "complete_now", "arguments": {"x": "b"}})
        refused = await post_call(console, run_id, other, keyed(console, "deploy-1"))
        assert refused.status_code == 422, refused.text
        assert "another request" in refused.json()["error"]["fields"]["Idempotency-Key"]
        elsewhere = await console.new_run()  # the same body to another run is another request
        assert (await post_call(console, elsewhere, TOOL, keyed(console, "deploy-1"))).status_code == 422

        # Another person's key is theirs: lead's "deploy-1" is new.
        lead_run = await console.new_run(who="lead")
        theirs = await post_call(console, lead_run, TOOL, keyed(console, "deploy-1", who="lead"))
        assert theirs.status_code == 200, theirs.text
        assert theirs.json()["id"] != first.json()["id"]

        fresh = await post_call(console, run_id, other, keyed(console, "deploy-2"))
        assert fresh.status_code == 200, fresh.text
        assert len(await calls_in(console, run_id)) == 2
        assert tool_calls(log) == 3


async def test_two_requests_with_one_key_at_once_make_one_call(database_url: str, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    async with running_console(database_url, {"mrtr": memory_mrtr(log)}) as console:
        run_id = await console.new_run()
        answers: list[httpx.Response] = []

        async def send() -> None:
            answers.append(await post_call(console, run_id, TOOL, keyed(console, "together")))

        async with anyio.create_task_group() as both:
            both.start_soon(send)
            both.start_soon(send)
        assert sorted(a.status_code for a in answers) == [200, 200], [a.text for a in answers]
        assert len({a.json()["id"] for a in answers}) == 1
        assert len(await calls_in(console, run_id)) == 1
        assert tool_calls(log) == 1


async def test_two_answers_with_one_key_at_once_both_get_the_answer(
    database_url: str, tmp_path: Path
) -> None:
    async with running_console(database_url, {"mrtr": memory_mrtr(tmp_path / "log.jsonl")}) as console:
        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        url = f"/api/v1/elicitations/{call['pending'][0]['id']}/answer"
        answer = {"action": "accept", "content": {"name": "ada"}}
        answers: list[httpx.Response] = []

        async def send() -> None:
            answers.append(
                await console.client.post(url, json=answer, headers=keyed(console, "a", who="lead"))
            )

        async with anyio.create_task_group() as both:
            both.start_soon(send)
            both.start_soon(send)
        assert sorted(a.status_code for a in answers) == [200, 200], [a.text for a in answers]
        assert {a.json()["status"] for a in answers} == {"accepted"}
        assert len(await console.audit_payloads("question_answered")) == 1


async def test_runs_and_answers_take_keys_too_and_keys_lapse_after_a_day(
    database_url: str, tmp_path: Path
) -> None:
    async with running_console(database_url, {"mrtr": memory_mrtr(tmp_path / "log.jsonl")}) as console:
        body = {"team": TEAM, "title": "release", "agent": "pytest"}
        first = await console.client.post("/api/v1/runs", json=body, headers=keyed(console, "run-1"))
        again = await console.client.post("/api/v1/runs", json=body, headers=keyed(console, "run-1"))
        assert (first.status_code, again.status_code) == (201, 201), again.text
        assert again.json() == first.json()
        async with console.runtime.factory() as session:
            assert len((await session.execute(select(Run.id))).scalars().all()) == 1

        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        question = call["pending"][0]["id"]
        answer = {"action": "accept", "content": {"name": "ada"}}
        url = f"/api/v1/elicitations/{question}/answer"
        accepted = await console.client.post(url, json=answer, headers=keyed(console, "ans-1", who="lead"))
        assert accepted.status_code == 200, accepted.text
        replayed = await console.client.post(url, json=answer, headers=keyed(console, "ans-1", who="lead"))
        assert replayed.status_code == 200, replayed.text
        assert replayed.json()["id"] == question and replayed.json()["status"] == "accepted"  # noqa: PT018
        unkeyed = await console.client.post(url, json=answer, headers=console.auth("lead"))
        assert unkeyed.status_code == 409  # without its key a second answer is just late
        assert len(await console.audit_payloads("question_answered")) == 1

        bad = await console.client.post("/api/v1/runs", json=body, headers=keyed(console, "has space"))
        assert bad.status_code == 422
        assert "printable ASCII" in bad.json()["error"]["fields"]["Idempotency-Key"]
        long = await console.client.post("/api/v1/runs", json=body, headers=keyed(console, "k" * 256))
        assert long.status_code == 422

        async with console.runtime.factory() as session:  # a day and an hour later
            for kept in (await session.execute(select(IdempotentRequest))).scalars():
                kept.created_at -= timedelta(hours=25)
            await session.commit()
        renamed = {**body, "title": "another release"}
        lapsed = await console.client.post("/api/v1/runs", json=renamed, headers=keyed(console, "run-1"))
        assert lapsed.status_code == 201, lapsed.text
        assert lapsed.json()["id"] != first.json()["id"]


async def test_two_people_sending_the_same_body_with_the_same_key_each_get_their_own_result(
    database_url: str, tmp_path: Path
) -> None:
    """A key is its person's: another person's identical request (same key, same body, same path) is a
    request of its own, never a replay of the first one's answer; another team's is refused as such."""
    async with running_console(database_url, {"mrtr": memory_mrtr(tmp_path / "log.jsonl")}) as console:
        body = {"team": TEAM, "title": "release", "agent": "pytest"}
        runs = {
            who: await console.client.post("/api/v1/runs", json=body, headers=keyed(console, "same", who))
            for who in ("dev", "lead", "outsider")
        }
        assert (runs["dev"].status_code, runs["lead"].status_code) == (201, 201), runs["lead"].text
        assert runs["lead"].json()["id"] != runs["dev"].json()["id"]
        assert (runs["dev"].json()["owner"], runs["lead"].json()["owner"]) == ("dev", "lead")
        assert runs["outsider"].status_code in (403, 404), runs["outsider"].text
        assert runs["dev"].json()["id"] not in runs["outsider"].text

        call = await console.call("mrtr", "two_rounds", {"topic": "alpha"})
        url = f"/api/v1/elicitations/{call['pending'][0]['id']}/answer"
        answer = {"action": "accept", "content": {"name": "ada"}}
        first = await console.client.post(url, json=answer, headers=keyed(console, "ans", "lead"))
        second = await console.client.post(url, json=answer, headers=keyed(console, "ans", "lead2"))
        assert first.status_code == 200, first.text
        assert second.status_code == 409, second.text  # lead answered first; lead2 is told so
        assert "lead" in second.json()["error"]["message"]
        async with console.runtime.factory() as session:
            owners = (await session.execute(select(Run.owner_id).where(Run.title == "release"))).scalars()
            assert len(set(owners)) == 2
