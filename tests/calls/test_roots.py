"""Roots that admins set answer a server's `roots/list` without asking anyone: a round's roots request
(2026-07-28, the everything test server over stdio and HTTP) and a request a 2025-11-25 server pushes
mid-call (mcp 1.x SDK). A server with no roots is never told the console offers them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console.errors import InvalidInput
from console.mcp.admin_roots import set_roots
from console.mcp.roots import Root, check_root, parse_root_lines
from console.transactions import transaction
from tests.harness import TEAM, Console, ServerSpec, result_text, running_console
from tests.mcp.sdk1 import SERVER as SDK1_SERVER
from tests.mcp.sdk1 import install as install_sdk1

pytestmark = pytest.mark.anyio
ROOTS_TOOL = "test_input_required_result_list_roots"
APP = Root("file:///srv/app", "Application code")
DATA = Root("file:///srv/data%20sets")


async def set_server_roots(console: Console, server: str | None, roots: list[Root] | None) -> None:
    async with transaction(console.runtime.factory) as session:
        await set_roots(session=session, by=None, team_name=TEAM, server_name=server, roots=roots)


def result_text_of(call: dict[str, Any]) -> str:
    return "".join(part["text"] for part in call["result"]["content"])


async def test_roots_are_answered_from_the_team_default_or_the_servers_own_and_offered_only_when_set(
    database_url: str, everything: ServerSpec
) -> None:
    async with running_console(database_url, {"everything": everything}) as console:
        unoffered = await console.call("everything", ROOTS_TOOL, {})
        assert unoffered["status"] == "failed", unoffered
        assert unoffered["error"]["data"] == {"requiredCapabilities": {"roots": {}}}, unoffered

        await set_server_roots(console, None, [APP, DATA])  # the team's default
        done = await console.call("everything", ROOTS_TOOL, {})
        assert result_text(done) == "Client exposed 2 root(s)."
        assert done["round"] == 1  # the server asked once, and the console answered by itself
        assert await console.pending_questions("lead") == []  # nobody was asked

        await set_server_roots(console, "everything", [DATA])  # its own replace the default
        assert result_text(await console.call("everything", ROOTS_TOOL, {})) == "Client exposed 1 root(s)."

        await set_server_roots(console, "everything", [])  # its own, empty: no roots at all
        refused = await console.call("everything", ROOTS_TOOL, {})
        assert refused["error"]["data"] == {"requiredCapabilities": {"roots": {}}}, refused

        await set_server_roots(console, "everything", None)  # back to the team's default
        assert result_text(await console.call("everything", ROOTS_TOOL, {})) == "Client exposed 2 root(s)."

        answered = await console.audit_payloads("roots_answered")
        assert [e["roots"] for e in answered] == [
            [APP.uri, DATA.uri],
            [DATA.uri],
            [APP.uri, DATA.uri],
        ]
        assert [e["key"] for e in answered] == ["client_roots"] * 3
        changes = await console.audit_payloads("server_roots_set") + await console.audit_payloads(
            "team_roots_set"
        )
        assert len(changes) == 4


@pytest.fixture(scope="module")
def sdk1_python() -> Path:
    return install_sdk1()


@pytest.mark.timeout(900)  # the first test here may install mcp 1.x
async def test_a_2025_11_25_server_that_pushes_a_roots_request_mid_call_gets_the_roots(
    database_url: str, sdk1_python: Path
) -> None:
    old = ServerSpec(command=[str(sdk1_python), str(SDK1_SERVER)])
    async with running_console(database_url, {"old": old}) as console:
        unoffered = await console.call("old", "show_roots", {})
        assert unoffered["result"]["isError"] is True, unoffered  # the client said it has no roots
        assert "List roots not supported" in result_text_of(unoffered)

        await set_server_roots(console, "old", [APP, DATA])
        done = await console.call("old", "show_roots", {})
        assert result_text(done) == f"roots: {APP.uri} ({APP.name}), {DATA.uri}"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("https://example.com/repo", "is not a file:// URI"),
        ("/srv/app", "is not a file:// URI"),
        ("file://host", "needs an absolute path"),
        ("file:///srv/app?x=1", "no query or fragment"),
        ("file:///srv/a\x07b", "no spaces or control characters"),
        ("file:///srv/app " + "n" * 201, "at most 200 printable characters"),
        ("file:///" + "a" * 2048, "at most 2048 characters"),
    ],
)
def test_a_root_entered_wrong_is_refused_naming_its_line(line: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_root_lines(f"file:///srv/ok\n\n{line}")
    message = refused.value.fields["roots"]
    assert message.startswith("line 3: "), message
    assert problem in message, message


def test_roots_are_read_one_per_line_with_an_optional_name_and_each_uri_once() -> None:
    assert parse_root_lines("  file:///srv/app  Application code \n\nfile:///srv/data%20sets\n") == [
        APP,
        DATA,
    ]
    assert check_root("FILE:///srv/app") == Root("FILE:///srv/app")
    with pytest.raises(InvalidInput, match="invalid roots") as twice:
        parse_root_lines("file:///a\nfile:///a x")
    assert twice.value.fields == {"roots": "file:///a is listed twice"}
    with pytest.raises(InvalidInput) as many:
        parse_root_lines("\n".join(f"file:///r{n}" for n in range(51)))
    assert many.value.fields == {"roots": "at most 50 roots"}
