"""The gateway with scripted agents on other SDKs: the official `mcp` 1.x Python SDK (MCP 2025-11-25:
initialize, one session) and the TypeScript SDK v2 client (MCP 2026-07-28, and 2025-11-25, which is
what it negotiates unless told otherwise), in front of the demo
deployer and the MRTR test server: what they list, a plain call, a question answered by a person, a
decline, and the hold bound passing followed by `console__await`."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.gateway.agents import DEPLOY, TARGET, ScriptedAgent, scripted_agent
from tests.gateway.ts_agent import install as install_ts_agent
from tests.harness import WAIT
from tests.mcp.sdk1 import REPO
from tests.mcp.sdk1 import install as install_sdk1
from tests.site import Site, decide_in_browser

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.timeout(900),
]  # the first use installs the SDKs
SDK1_AGENT = REPO / "tests/servers/sdk1_agent.py"


@pytest.fixture
def database_url(sqlite_template: Path, tmp_path: Path) -> str:
    """SQLite only: what these agents see does not depend on the database, which the other gateway
    tests run on both kinds (and each agent here costs a process start per test)."""
    path = tmp_path / "console.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@dataclass(frozen=True)
class Kind:
    """One scripted agent program: how to start it and the protocol it must end up speaking."""

    argv: list[str]
    version: str


@pytest.fixture(scope="module", params=["mcp-python-1.x", "typescript-v2", "typescript-v2-legacy"])
def kind(request: pytest.FixtureRequest) -> Kind:
    if request.param == "mcp-python-1.x":  # initialize and one session, as most agents in use today
        return Kind([str(install_sdk1()), str(SDK1_AGENT)], "2025-11-25")
    if request.param == "typescript-v2":  # stateless requests
        return Kind(install_ts_agent("auto"), "2026-07-28")
    return Kind(install_ts_agent("legacy"), "2025-11-25")  # the v2 SDK's default negotiation


@contextmanager
def scripted(
    kind: Kind, site: Site, tmp_path: Path, *, path: str = "/mcp", ask: bool = False
) -> Iterator[ScriptedAgent]:
    """dev's agent; with `ask`, its client declares elicitation and shows questions to dev."""
    argv = [*kind.argv, site.base + path, site.tokens["dev"], *(["ask"] if ask else [])]
    with scripted_agent(argv, tmp_path / "agent.txt") as agent:
        assert agent.ready == kind.version
        yield agent


def text_of(result: dict[str, Any]) -> str:
    return "".join(part["text"] for part in result["content"] if part["type"] == "text")


async def test_a_scripted_agent_lists_every_server_prefixed_and_a_plain_call_completes(
    site: Site, kind: Kind, tmp_path: Path
) -> None:
    with scripted(kind, site, tmp_path) as agent:
        agent.send(op="list_tools")
        names = set(agent.line()["tools"])
        assert {"deployer__deploy", "mrtr__complete_now", "console__await"} <= names
        agent.call("mrtr__complete_now", {"x": "there"})
        result, _ = agent.until_result()
    assert text_of(result) == "hello there"


async def test_a_scripted_agents_call_waits_for_an_approver_who_answers_in_the_browser(
    site: Site, kind: Kind, tmp_path: Path
) -> None:
    with scripted(kind, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        question = agent.question_id()
        await decide_in_browser(site, question, "lead", "accept", TARGET)
        result, _ = agent.until_result()
    assert text_of(result) == "auth-service 2.4.1 is being deployed to staging."
    assert not result.get("isError")


async def test_a_decline_reaches_a_scripted_agent_as_the_servers_answer(
    site: Site, kind: Kind, tmp_path: Path
) -> None:
    with scripted(kind, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        await decide_in_browser(site, agent.question_id(), "lead", "decline")
        result, _ = agent.until_result()
    assert text_of(result) == "Deployment not started (decline)."


async def test_past_the_hold_a_scripted_agent_learns_it_still_waits_and_console_await_gets_the_result(
    impatient_site: Site, kind: Kind, tmp_path: Path
) -> None:
    site = impatient_site
    with scripted(kind, site, tmp_path) as agent:
        agent.call("deployer__deploy", DEPLOY)
        waiting, _ = agent.until_result()
        assert waiting["isError"]
        told = waiting["_meta"]["io.approval-console/waiting"]
        call_id, question = told["call_id"], told["questions"][0]["id"]
        assert f'console__await with {{"call_id": "{call_id}"}}' in text_of(waiting)
        production = {"environment": "production", "confirm": True}
        answered = await site.answer(question, "accept", production, who="lead")
        assert answered.status_code == 200, answered.text
        for _ in range(int(WAIT)):  # each wait lasts the 1 s hold at most
            agent.call("console__await", {"call_id": call_id})
            done, _ = agent.until_result()
            if not done.get("isError"):
                break
    assert text_of(done) == "auth-service 2.4.1 is being deployed to production."


PRODUCTION = {"action": "accept", "content": {"environment": "production", "confirm": True}}


async def deploy_question(site: Site, status: str) -> dict[str, Any]:
    """The one deploy question in `status`, as an approver reads it."""
    response = await site.api.get(
        "/api/v1/elicitations", params={"status": status}, headers=site.auth("lead")
    )
    items: list[dict[str, Any]] = [q for q in response.json()["items"] if q["params"].get("name") == "deploy"]
    assert len(items) == 1, items
    return items[0]


async def test_a_scripted_agents_client_answers_a_question_its_owner_may_decide(
    site: Site, kind: Kind, tmp_path: Path
) -> None:
    with scripted(kind, site, tmp_path, ask=True) as agent:
        agent.call("deployer__deploy", DEPLOY)
        assert agent.asked() == {"message": "auth-service in version 2.4.1 — deploy where?", "mode": "form"}
        agent.send(answer=PRODUCTION)
        result, _ = agent.until_result()
    assert text_of(result) == "auth-service 2.4.1 is being deployed to production."
    assert (await deploy_question(site, "accepted"))["decided_by"] == "dev"


async def test_when_a_person_answers_first_a_scripted_agents_late_answer_changes_nothing(
    site: Site, kind: Kind, tmp_path: Path
) -> None:
    with scripted(kind, site, tmp_path, ask=True) as agent:
        agent.call("deployer__deploy", DEPLOY)
        agent.asked()  # dev's client shows the question; lead decides in the browser meanwhile
        question = await deploy_question(site, "pending")
        await decide_in_browser(site, question["id"], "lead", "accept", TARGET)
        agent.send(answer=PRODUCTION)
        result, _ = agent.until_result()
    assert text_of(result) == "auth-service 2.4.1 is being deployed to staging."
    decided = await site.question(question["id"], who="lead")
    assert (decided["decided_by"], decided["content"]["environment"]) == ("lead", "staging")


@pytest.mark.parametrize(
    ("tool", "answered"), [("ask_sampling", "CreateMessageResult"), ("ask_roots", "ListRootsResult")]
)
async def test_a_servers_sampling_and_roots_requests_are_answered_by_the_scripted_agent(
    site: Site, kind: Kind, tmp_path: Path, tool: str, answered: str
) -> None:
    with scripted(kind, site, tmp_path, ask=True) as agent:
        agent.call(f"mrtr__{tool}", {})
        result, _ = agent.until_result()
    assert text_of(result) == f"{tool} answered: {answered}"
