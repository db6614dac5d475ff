"""An answer the agent's own client gives that the console refuses is never dropped in silence: the agent
gets a JSON-RPC error naming the field (-32602) at once, far within the hold, and the console call is
abandoned with its questions withdrawn, since the agent was told it failed. A link accepted with an
empty `content`, as the fastmcp client sends it, is taken as accepted.

The agents are the real fastmcp clients (2.14.7 on mcp 1.x: MCP 2025-11-25, the question pushed on its
session; 4.1.6 on mcp 2.x: MCP 2026-07-28, `input_required` and a retry), the `mcp` 2.3 Python `Client`,
the `mcp` 1.30 client sending what it should not, and raw 2026-07-28 requests for what no SDK client
sends (a field the form has not, content on a link, answers that are no results at all). Once the call
ended so, a person's later answer is refused and the server never gets the request."""

from __future__ import annotations

import json
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult

from tests.gateway.agents import META, payload, scripted_agent
from tests.harness import WAIT, seed, stdio_mrtr
from tests.interop.foreign import python_env
from tests.mcp.sdk1 import REPO
from tests.mcp.sdk1 import install as install_sdk1
from tests.processes import console_process, requests_with
from tests.site import Site

pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.timeout(900)]  # the first use installs
HOLD = WAIT * 15  # an answer dropped in silence would hold the agent 300 s; each bound here is far less
AGENT = REPO / "tests/interop/fastmcp_agent.py"
SDK1_AGENT = REPO / "tests/servers/sdk1_agent.py"
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Running:
    base: str
    tokens: dict[str, str]
    database_url: str
    mrtr_log: Path


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def running(
    request: pytest.FixtureRequest,
    sqlite_template: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Running]:
    """One console per database kind for the module, in front of the MRTR test server (stdio)."""
    folder = tmp_path_factory.mktemp("refused")
    postgres = request.getfixturevalue("postgres") if request.param == "postgres" else None
    if request.param == "sqlite":
        shutil.copyfile(sqlite_template, folder / "console.db")
        database_url = f"sqlite+aiosqlite:///{folder / 'console.db'}"
    elif postgres is None:
        pytest.skip("set CONSOLE_TEST_POSTGRES_URL to run PostgreSQL tests")
    else:
        name = postgres.create()
        database_url = postgres.url_for(name)
    tokens = anyio.run(seed, database_url, {"mrtr": stdio_mrtr(folder / "mrtr.jsonl")})
    try:
        with console_process(
            database_url, folder / "console.txt", CONSOLE_GATEWAY_HOLD_SECONDS=str(HOLD)
        ) as base:
            yield Running(base, tokens, database_url, folder / "mrtr.jsonl")
    finally:
        if postgres is not None:
            postgres.drop(name)


@pytest.fixture
def mrtr_log(running: Running) -> Path:
    return running.mrtr_log


@pytest.fixture
async def site(running: Running) -> AsyncIterator[Site]:
    async with httpx.AsyncClient(base_url=running.base, timeout=60) as api:
        yield Site(running.base, running.tokens, api, running.database_url)


@dataclass(frozen=True)
class Fastmcp:
    """One pinned fastmcp client: its interpreter, the protocol it negotiates with the console, and where
    the answer sits in the request the console refuses (MRTR: in the retry's `inputResponses`)."""

    python: Path
    protocol: str
    answer_at: str


@pytest.fixture(params=["fastmcp-2", "fastmcp-4"])
def fastmcp(request: pytest.FixtureRequest) -> Fastmcp:
    python = python_env(request.param) / "python"
    if request.param == "fastmcp-2":  # mcp 1.x: initialize, the question pushed on its session
        return Fastmcp(python, "2025-11-25", "")
    return Fastmcp(python, "2026-07-28", "inputResponses.confirm.")  # probes server/discover


async def fastmcp_agent(
    fastmcp: Fastmcp, site: Site, tool: str, arguments: dict[str, Any], answer: Any
) -> dict[str, Any]:
    """What dev's fastmcp agent printed: it calls `tool` and answers each question with `answer` (bounded:
    far below the hold, so an answer dropped in silence fails the test)."""
    argv = [str(fastmcp.python), str(AGENT), site.base + "/mcp", site.tokens["dev"], tool]
    with anyio.fail_after(WAIT * 2):  # a process start and fastmcp's imports, then the call
        done = await anyio.run_process([*argv, json.dumps(arguments), json.dumps(answer)], check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    said: dict[str, Any] = json.loads(done.stdout)
    return said


async def questions_in(site: Site, status: str) -> list[dict[str, Any]]:
    """dev's questions in `status`, as the API lists them."""
    response = await site.api.get("/api/v1/elicitations", params={"status": status}, headers=site.auth("dev"))
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


async def assert_abandoned_with_its_question_withdrawn(site: Site, message: str) -> dict[str, Any]:
    [question] = [q for q in await questions_in(site, "superseded") if q["message"] == message]
    call = await site.get_call(question["call_id"])
    assert call["status"] == "abandoned"
    assert call["error"]["withdrawn_by_agent"] is True
    assert "the console refused the answer" in call["error"]["reason"]  # why, not only who
    return question


async def assert_nothing_runs_once_answered(site: Site, mrtr_log: Path, item: str) -> None:
    """The signed tool's call for `item` ended with its question withdrawn: dev, who may decide it, is
    refused when answering it now, and the server only ever got the request that asked."""
    question = await assert_abandoned_with_its_question_withdrawn(site, f"Sign {item}?")
    late = await site.answer(question["id"], "accept", {"ok": True}, who="dev")
    assert late.status_code == 409, late.text
    assert (await site.get_call(question["call_id"]))["status"] == "abandoned"
    [asked] = requests_with(mrtr_log, "item", item)
    assert asked["has_request_state"] is False


async def test_a_link_accepted_with_an_empty_content_by_fastmcp_completes_the_call(
    site: Site, fastmcp: Fastmcp
) -> None:
    link = f"https://example.com/verify/{secrets.token_hex(4)}"
    said = await fastmcp_agent(fastmcp, site, "mrtr__bad_url", {"url": link}, {})  # fastmcp: accept, {}
    assert said["protocol"] == fastmcp.protocol
    assert said["asked"] == [{"mode": "url", "message": "Open this link"}]
    assert said.get("result") == "bad_url answered: accept", said
    [question] = [q for q in await questions_in(site, "accepted") if q["url"] == link]
    assert question["decided_where"] == "in their agent (MCP)"


async def test_a_form_answer_that_does_not_fit_gets_fastmcp_an_error_naming_the_field_and_ends_the_call(
    site: Site, fastmcp: Fastmcp
) -> None:
    item = f"release-{secrets.token_hex(4)}"
    said = await fastmcp_agent(fastmcp, site, "mrtr__signed", {"item": item}, {"ok": "yes"})
    assert said["protocol"] == fastmcp.protocol
    assert said["asked"] == [{"mode": "form", "message": f"Sign {item}?"}], said  # asked once, not again
    error = said.get("error")
    assert error is not None, said
    assert error["code"] == INVALID_PARAMS
    assert (error["data"]["field"], error["data"]["reason"]) == (
        f"{fastmcp.answer_at}content.ok",
        "must be true or false",
    )
    assert f"{fastmcp.answer_at}content.ok must be true or false" in error["message"]
    await assert_abandoned_with_its_question_withdrawn(site, f"Sign {item}?")


async def test_a_value_out_of_the_forms_bounds_gets_an_mcp_python_client_an_error_naming_the_field(
    site: Site,
) -> None:
    """The `mcp` 2.3 `Client` (2026-07-28): its retry's answer is refused with -32602, not asked again."""
    topic = f"budget-{secrets.token_hex(4)}"
    asked: list[str] = []

    async def dev_answers(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        if "name" in params.message:
            return ElicitResult(action="accept", content={"name": "ada"})
        return ElicitResult(action="accept", content={"amount": 500, "count": 2})  # at most 100

    http = httpx2.AsyncClient(headers=site.auth("dev"), timeout=httpx2.Timeout(30, read=HOLD))
    transport = streamable_http_client(site.base + "/mcp", http_client=http)
    async with http, Client(transport, elicitation_callback=dev_answers) as client:
        with anyio.fail_after(WAIT), pytest.raises(MCPError) as refused:
            await client.call_tool("mrtr__two_rounds", {"topic": topic})
    second = f"Thanks ada. How much and how many for {topic}?"
    assert asked == [f"About {topic}: what is your name?", second]
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.data["field"] == "inputResponses.second.content.amount"
    assert refused.value.data["reason"] == "must be at most 100"
    await assert_abandoned_with_its_question_withdrawn(site, second)


async def test_an_answer_that_is_no_elicit_result_fails_a_2025_11_25_call_naming_the_field(
    site: Site, mrtr_log: Path, tmp_path: Path
) -> None:
    """The `mcp` 1.30 client (2025-11-25) sending an action the protocol has not: the SDK's check of the
    pushed request's result refuses it, and the agent's tools/call ends with that error."""
    item = f"release-{secrets.token_hex(4)}"
    argv = [str(install_sdk1()), str(SDK1_AGENT), site.base + "/mcp", site.tokens["dev"], "ask"]
    with scripted_agent(argv, tmp_path / "agent.txt") as agent:
        assert agent.ready == "2025-11-25"
        agent.call("mrtr__signed", {"item": item})
        assert agent.asked() == {"message": f"Sign {item}?", "mode": "form"}
        agent.send(answer={"action": "approve"}, unchecked=True)
        while "error" not in (told := agent.line()):  # bounded: WAIT per line
            assert "progress" in told, told
    assert told["code"] == INVALID_PARAMS
    assert (told["data"]["field"], told["data"]["reason"]) == (
        "action",
        "Input should be 'accept', 'cancel' or 'decline'",
    )
    await assert_nothing_runs_once_answered(site, mrtr_log, item)


ELICITATION: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}


async def retried(
    site: Site, tool: str, arguments: dict[str, Any], answers: Any, capabilities: dict[str, Any] = ELICITATION
) -> dict[str, Any]:
    """A raw 2026-07-28 call declaring form and URL elicitation (or `capabilities`), and its retry with
    `answers`; the retry's JSON-RPC message."""
    first = await modern(site, {"name": tool, "arguments": arguments}, capabilities)
    assert first["result"]["resultType"] == "input_required", first
    state = first["result"]["requestState"]
    return await modern(
        site,
        {"name": tool, "arguments": arguments, "requestState": state, "inputResponses": answers},
        capabilities,
    )


async def modern(site: Site, params: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": params["name"],
        **site.auth("dev"),
    }
    meta = {**META, "io.modelcontextprotocol/clientCapabilities": capabilities}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**params, "_meta": meta}}
    with anyio.fail_after(WAIT):
        return payload(await site.api.post("/mcp", json=body, headers=headers))


@pytest.mark.parametrize(
    ("tool", "arguments", "answers", "field", "reason"),
    [
        pytest.param(
            "mrtr__signed",
            {"item": "an-unknown-field"},
            {"confirm": {"action": "accept", "content": {"ok": True, "colour": "red"}}},
            "inputResponses.confirm.content",
            "unknown fields: colour",
            id="a-field-the-form-has-not",
        ),
        pytest.param(
            "mrtr__bad_url",
            {"url": "https://example.com/content-on-a-link"},
            {"link": {"action": "accept", "content": {"done": True}}},
            "inputResponses.link.content",
            "a URL question is accepted without content",
            id="content-on-a-link",
        ),
    ],
)
async def test_an_answer_no_sdk_client_would_send_is_refused_naming_the_field(
    site: Site, tool: str, arguments: dict[str, Any], answers: dict[str, Any], field: str, reason: str
) -> None:
    retry = await retried(site, tool, arguments, answers)
    assert "result" not in retry, retry
    assert retry["error"]["code"] == INVALID_PARAMS
    assert (retry["error"]["data"]["field"], retry["error"]["data"]["reason"]) == (field, reason)
    assert retry["error"]["message"].endswith(f"{field} {reason}")
    if tool == "mrtr__signed":
        await assert_abandoned_with_its_question_withdrawn(site, "Sign an-unknown-field?")


@pytest.mark.parametrize(
    ("answers", "field", "reason"),
    [
        pytest.param(
            {"confirm": {"action": "maybe"}},
            "inputResponses.confirm.action",
            "must be one of accept, decline, cancel",
            id="an-unknown-action",
        ),
        pytest.param(
            {"confirm": "yes"},
            "inputResponses.confirm",
            "must be an object",
            id="an-answer-that-is-no-object",
        ),
        pytest.param(
            {"confirm": {"action": "accept", "content": ["ok"]}},
            "inputResponses.confirm.content",
            "content must be a JSON object",
            id="content-that-is-no-object",
        ),
        pytest.param(
            {"confirm": {"action": "accept", "content": {"ok": {"surely": True}}}},
            "inputResponses.confirm.content.ok",
            "must be true or false",
            id="a-value-no-elicitation-result-has",
        ),
        pytest.param(["yes"], "inputResponses", "must be an object", id="answers-that-are-no-object"),
    ],
)
async def test_a_retry_whose_answers_are_no_results_is_refused_naming_the_field_and_nothing_runs(
    site: Site, mrtr_log: Path, answers: Any, field: str, reason: str
) -> None:
    """Answers the protocol's own types refuse (the SDK's check of the request would, before the console
    read them): the console reads them itself, so the agent learns which field, and the call ends."""
    item = f"release-{secrets.token_hex(4)}"
    retry = await retried(site, "mrtr__signed", {"item": item}, answers)
    assert "result" not in retry, retry
    assert retry["error"]["code"] == INVALID_PARAMS
    assert (retry["error"]["data"]["field"], retry["error"]["data"]["reason"]) == (field, reason)
    assert retry["error"]["message"].endswith(f"{field} {reason}")
    await assert_nothing_runs_once_answered(site, mrtr_log, item)


@pytest.mark.parametrize(
    ("tool", "capabilities", "answers", "field", "reason"),
    [
        pytest.param(
            "mrtr__ask_roots",
            {"roots": {}},
            {"roots": {"roots": [{"uri": "https://example.com/project"}]}},
            "inputResponses.roots.roots.0.uri",
            "URL scheme should be 'file'",
            id="a-root-that-is-no-file",
        ),
        pytest.param(
            "mrtr__ask_sampling",
            {"sampling": {}},
            {"llm": {"role": "assistant", "content": {"type": "text", "text": "Hello."}}},
            "inputResponses.llm.model",
            "Field required",
            id="a-message-without-its-model",
        ),
    ],
)
async def test_a_retry_whose_sampling_or_roots_answer_is_no_result_is_refused_naming_the_field(
    site: Site, tool: str, capabilities: dict[str, Any], answers: dict[str, Any], field: str, reason: str
) -> None:
    """What the agent's client answers the server is checked as the result the server asked for, since
    the console sends it on as such."""
    retry = await retried(site, tool, {}, answers, capabilities)
    assert "result" not in retry, retry
    assert retry["error"]["code"] == INVALID_PARAMS
    assert (retry["error"]["data"]["field"], retry["error"]["data"]["reason"]) == (field, reason)
