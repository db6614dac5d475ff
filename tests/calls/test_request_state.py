"""requestState goes back to the server exactly as the server sent it (or not at all when it sent none).

The MRTR test server's `echo_state(state)` asks one question with requestState = `state` and, on the
retry, reports whether what came back matches; its request log records the length and SHA-256 of every
requestState it received, so each case is checked from both ends.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Console, Mrtr, running_console
from tests.processes import read_log

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
_PATTERN = string.ascii_letters + string.digits + '"\\/\n\t {}'
CORPUS: dict[str, str] = {
    "unicode": "café 日本 🚀 e\u0301 Ωmega",
    "quotes": "she said \"hi\" and 'bye'",
    "backslash": "C:\\path\\to \\\\ \\u0041 \\n",  # literal backslashes, not escapes
    "newline_tab": "line 1\nline 2\tcolumn\r\n",
    "nul": "before\u0000after",
    "control": "\u0001\u001f\u007f",
    "line_separators": "a\u2028b\u2029c",
    "spaces": "  padded both sides  ",
    "empty": "",
    "json_looking": '{"requestState": null, "n": 1}',
    "jwt": "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "one_mib": (_PATTERN * (MIB // len(_PATTERN) + 1))[:MIB],
}
GO = {"ok": True}


@dataclass(frozen=True)
class Echo:
    """One echo_state call: what the agent got back and what the server logged for it."""

    state: str
    call: dict[str, Any]
    sent: list[dict[str, Any]]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def echo(console: Console, log: Path, state: str, *, with_state: bool = True) -> Echo:
    """Call echo_state, accept its question, and return the finished call with the server's log lines."""
    tag = secrets.token_hex(8)  # marks this call's requests in a log the HTTP server shares
    arguments: dict[str, Any] = {"state": state, "tag": tag}
    if not with_state:
        arguments["with_state"] = False
    call = await console.call("mrtr", "echo_state", arguments)
    assert call["status"] == "awaiting_input", json.dumps(call)[:2000]
    assert [p["key"] for p in call["pending"]] == ["go"]
    done = await console.answer_and_settle(call, "accept", GO)
    sent = [r for r in read_log(log) if (r["arguments"] or {}).get("tag") == tag]
    return Echo(state, done, sent)


def report(echo: Echo) -> dict[str, Any]:
    """The tool's report of what came back, read from its text and its structured content."""
    assert echo.call["status"] == "completed", json.dumps(echo.call)[:2000]
    result = echo.call["result"]
    [text] = [part["text"] for part in result["content"] if part["type"] == "text"]
    assert json.loads(text) == result["structuredContent"]
    structured: dict[str, Any] = result["structuredContent"]
    return structured


def problems_with(echo: Echo) -> list[str]:
    """Everything wrong with one round trip of `echo.state`; empty when it came back byte for byte."""
    if echo.call["status"] != "completed":
        return [f"call ended {echo.call['status']}: {echo.call.get('error')}"]
    problems: list[str] = []
    got = report(echo)
    if got["matches"] is not True or got["has_request_state"] is not True:
        problems.append(
            f"tool reported matches={got['matches']} has_request_state={got['has_request_state']}"
        )
    if got["received_state"] != echo.state:
        problems.append(f"tool received {str(got['received_state'])[:200]!r}")
    if len(echo.sent) != 2:
        return [*problems, f"server got {len(echo.sent)} requests, not 2"]
    first, retry = echo.sent
    if first["has_request_state"]:
        problems.append("the first request carried a requestState")
    if not retry["has_request_state"]:
        problems.append("the retry carried no requestState")
    if (retry["request_state_len"], retry["request_state_sha256"]) != (len(echo.state), sha256(echo.state)):
        problems.append(
            f"retry state has len {retry['request_state_len']} sha256 {retry['request_state_sha256']}, "
            f"sent len {len(echo.state)} sha256 {sha256(echo.state)}"
        )
    if retry["request_id"] == first["request_id"]:
        problems.append(f"the retry reused JSON-RPC id {first['request_id']!r}")
    if retry["input_responses"] != {"go": {"action": "accept", "content": GO}}:
        problems.append(f"retry inputResponses {retry['input_responses']!r}")
    return problems


async def test_request_state_reaches_the_server_byte_for_byte(database_url: str, mrtr: Mrtr) -> None:
    # One console (and one server connection) for the whole corpus keeps this quick; every case is
    # checked and all failures are reported together, by name.
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        echoes = {name: await echo(console, mrtr.log, state) for name, state in CORPUS.items()}
    wrong = {name: problems for name, e in echoes.items() if (problems := problems_with(e))}
    assert wrong == {}
    # The log keeps short states verbatim: compare those character for character too.
    for name, e in echoes.items():
        if len(e.state) <= 4096:
            assert e.sent[1]["request_state"] == e.state, name


async def test_without_a_request_state_the_retry_has_none(database_url: str, mrtr: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        e = await echo(console, mrtr.log, "not sent", with_state=False)
    got = report(e)
    assert got == {"received_state": None, "has_request_state": False, "matches": True}
    [first, retry] = e.sent
    assert retry["input_responses"] == {"go": {"action": "accept", "content": GO}}
    assert retry["has_request_state"] is False
    assert retry["request_state_len"] is None
    assert first["has_request_state"] is False


async def test_a_resume_repeats_the_agents_request_under_a_new_json_rpc_id(
    database_url: str, mrtr: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr.spec}) as console:
        e = await echo(console, mrtr.log, "state-1")
    assert report(e)["matches"] is True
    [first, retry] = e.sent
    assert retry["request_id"] != first["request_id"]
    assert (retry["method"], retry["name"], retry["arguments"]) == (
        first["method"],
        first["name"],
        first["arguments"],
    )
    assert (first["has_request_state"], retry["request_state"]) == (False, "state-1")
