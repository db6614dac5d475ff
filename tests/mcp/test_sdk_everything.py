"""The Python SDK's everything-server example (fetched from the `mcp` source distribution, not copied
here) behind the console: each of its `test_input_required_result_*` tools, its questions answered as
people answer them (forms, and sampling replies a person writes) and its roots requests from the roots
an admin set. docs/performance.md ("Servers nobody here wrote") cites the counts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from console.mcp.admin_roots import set_roots
from console.mcp.roots import Root
from console.transactions import transaction
from tests.harness import TEAM, Console, ServerSpec, running_console
from tests.mcp.sdk_everything import running_example
from tests.policies.setup import set_policy

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]  # the first run downloads the sdist
ANSWERS: dict[str, dict[str, Any]] = {  # by the question's key
    "user_name": {"name": "Ada"},
    "step1": {"name": "Ada"},
    "step2": {"color": "teal"},
    "confirm": {"ok": True},
    "ask": {"name": "Ada"},
    "capital_question": {"reply": "Paris."},
    "greeting": {"reply": "Hello there!"},
    "sample": {"reply": "Hello."},
}
COMPLETES = {
    "test_input_required_result_elicitation": "Hello, Ada!",
    "test_input_required_result_sampling": "Model said: Paris.",
    "test_input_required_result_list_roots": "Client exposed 2 root(s).",
    "test_input_required_result_request_state": "state-ok: confirmation received",
    "test_input_required_result_multiple_inputs": "All inputs received.",
    "test_input_required_result_multi_round": "Ada likes teal.",
    "test_input_required_result_tampered_state": "state-ok: round-1",
}
# It asks for what the client declared ("sample" and "ask" here) in every round, answered or not, so no
# client ever completes it: the console answers each round and stops at its round cap.
NEVER_COMPLETES = "test_input_required_result_capabilities"


@pytest.fixture(scope="module")
def example_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_example(tmp_path_factory.mktemp("sdk-everything") / "stderr.txt") as url:
        yield url


async def answered_to_the_end(console: Console, tool: str) -> dict[str, Any]:
    """Call `tool` and answer every question it asks, round after round, as an approver would."""
    call = await console.call("example", tool, {})
    while call["status"] == "awaiting_input":
        for pending in call["pending"]:
            response = await console.answer(pending["id"], "accept", ANSWERS[pending["key"]])
            assert response.status_code == 200, response.text
        call = await console.settle(call["id"], after_round=call["round"])
    return call


async def test_every_input_required_tool_of_the_sdks_everything_server_completes_through_the_console(
    sqlite_url: str, example_url: str
) -> None:
    async with running_console(sqlite_url, {"example": ServerSpec(url=example_url)}, round_cap=4) as console:
        await set_policy(console, "server", server="example", sampling=True)
        async with transaction(console.runtime.factory) as session:
            roots = [Root("file:///srv/app", "App"), Root("file:///srv/data")]
            await set_roots(session=session, by=None, team_name=TEAM, server_name="example", roots=roots)
        results = {}
        for tool in COMPLETES:
            done = await answered_to_the_end(console, tool)
            assert done["status"] == "completed", done
            results[tool] = "".join(part["text"] for part in done["result"]["content"])
        assert results == COMPLETES

        looping = await answered_to_the_end(console, NEVER_COMPLETES)
        assert looping["status"] == "abandoned", looping
        assert looping["error"]["message"] == "gave up after 4 rounds (round cap)"
