"""`console call`: the book's deploy example and its decline and cancel variants, answers that run out, a
registered server (nothing recorded in the console's database), several rounds over HTTP, a tool that
reports an error, and bad input as one clear line."""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness import EVERYTHING
from tests.mcp import sdk1
from tests.processes import ServerProcess
from tests.test_cli import console

DEPLOYER = shlex.join([sys.executable, "-m", "console.demo.deployer"])
STATE_KEY = "DEPLOY_STATE_KEY=" + "k" * 32
EVERYTHING_COMMAND = shlex.join(EVERYTHING)
QUESTION = "auth-service in version 2.4.1 — deploy where?"
PRODUCTION = 'accept:{"environment":"production","confirm":true}'


def call(tmp_path: Path, *args: str, url: str | None = None) -> tuple[int, list[dict[str, Any]], str]:
    """`console call ARGS`: its exit status, each JSON line it printed, and what it said on stderr."""
    database = url or f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    done: subprocess.CompletedProcess[str] = console("call", *args, url=database, cwd=tmp_path)
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def text_of(end: dict[str, Any]) -> str:
    return "".join(part["text"] for part in end["result"]["content"] if part["type"] == "text")


def deploy(tmp_path: Path, *elicit: str) -> tuple[int, list[dict[str, Any]], str]:
    answers = [arg for answer in elicit for arg in ("--elicit", answer)]
    return call(
        tmp_path,
        "deploy",
        "--command",
        DEPLOYER,
        "--env",
        STATE_KEY,
        "--args",
        '{"service":"auth-service"}',
        *answers,
    )


def test_the_deploy_example_accepted_declined_and_cancelled(tmp_path: Path) -> None:
    status, (asked, end), _ = deploy(tmp_path, PRODUCTION)
    assert status == 0
    assert asked["round"] == 1
    assert asked["inputRequests"]["target"]["params"]["message"] == QUESTION
    assert asked["answers"] == {
        "target": {"action": "accept", "content": {"environment": "production", "confirm": True}}
    }
    assert (end["status"], text_of(end)) == (
        "completed",
        "auth-service 2.4.1 is being deployed to production.",
    )
    for action in ("decline", "cancel"):
        status, (asked, end), _ = deploy(tmp_path, action)
        assert status == 0
        assert asked["answers"] == {"target": {"action": action, "content": None}}
        assert text_of(end) == f"Deployment not started ({action})."


def test_a_question_without_an_answer_left_is_printed_and_the_exit_status_says_so(tmp_path: Path) -> None:
    status, (asked, end), stderr = deploy(tmp_path)
    assert status == 2
    assert asked["unanswered"] == ["target"]
    assert asked["inputRequests"]["target"]["params"]["message"] == QUESTION
    assert end == {"status": "awaiting_input", "result": None, "error": None}
    assert (
        stderr.strip() == "error: no --elicit answer left for the question above; the call was left waiting"
    )


def test_several_rounds_of_an_unregistered_http_server(tmp_path: Path, mrtr_http: ServerProcess) -> None:
    status, lines, _ = call(
        tmp_path,
        *("two_rounds", "--url", mrtr_http.url, "--args", '{"topic":"cli"}'),
        *("--elicit", 'accept:{"name":"Ada"}', "--elicit", 'accept:{"amount":12.5,"count":3}'),
    )
    assert status == 0
    assert [line.get("round") for line in lines] == [1, 2, None]
    assert text_of(lines[-1]) == "Ada 12.5 3"


def test_a_registered_server_is_called_without_recording_anything_in_the_consoles_database(
    tmp_path: Path,
) -> None:
    database = tmp_path / "console.db"
    url = f"sqlite+aiosqlite:///{database}"
    for args in (
        ("teams", "add", "platform"),
        ("servers", "add", "deployer", "--team", "platform", "--command", DEPLOYER, "--env", STATE_KEY),
    ):
        assert console(*args, url=url, cwd=tmp_path).returncode == 0
    status, lines, _ = call(
        tmp_path, "deployer", "deploy", "--args", '{"service":"auth-service"}', "--elicit", "decline", url=url
    )
    assert status == 0
    assert text_of(lines[-1]) == "Deployment not started (decline)."
    with sqlite3.connect(database) as db:
        assert db.execute("select count(*) from call").fetchone() == (0,)
        assert db.execute("select count(*) from run").fetchone() == (0,)


def test_a_tool_that_reports_an_error_exits_non_zero(tmp_path: Path) -> None:
    status, lines, _ = call(tmp_path, "test_error_handling", "--command", EVERYTHING_COMMAND)
    assert status == 1
    assert lines[-1]["status"] == "completed"
    assert lines[-1]["result"]["isError"] is True


def test_a_server_that_cannot_start_says_why_at_once_in_its_own_words(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    failing = (
        "import sys; open(sys.argv[1], 'a').write('started\\n'); "
        "sys.exit('the tracker needs TRACKER_TOKEN; set it with --env')"
    )
    status, lines, stderr = call(
        tmp_path, "create_issue", "--command", shlex.join([sys.executable, "-c", failing, str(starts)])
    )
    assert status == 1
    assert lines[-1]["status"] == "failed"
    assert lines[-1]["error"]["message"].endswith(": the server exited with status 1 before it answered")
    assert "the tracker needs TRACKER_TOKEN; set it with --env" in stderr  # the server's own words
    assert len(starts.read_text().splitlines()) <= 2  # asked for its tools, then sent once: no retries


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["deploy", "--command", DEPLOYER, "--elicit", "maybe"],
            "--elicit 'maybe': use accept, accept:{JSON}, decline, cancel or wait",
        ),
        (["deploy", "--command", DEPLOYER, "--args", "{nope"], "--args is not JSON"),
        (["deploy", "--command", DEPLOYER, "--args", "[1]"], "--args must be a JSON object"),
        (["deployer", "deploy", "--command", DEPLOYER], "give SERVER TOOL, or TOOL with --url or --command"),
        (["nobody", "deploy"], "no server 'nobody'"),
        (["nope", "--command", DEPLOYER, "--env", STATE_KEY], "server 'tested' has no tool 'nope'"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path: Path, args: list[str], error: str) -> None:
    status, lines, stderr = call(tmp_path, *args)
    assert status == 1
    assert lines == []
    assert stderr.splitlines()[0].startswith(f"error: {error}"), stderr


def test_an_answer_that_does_not_fit_the_form_names_the_fields(tmp_path: Path) -> None:
    status, lines, stderr = deploy(tmp_path, 'accept:{"environment":"moon"}')
    assert status == 1
    assert [line["round"] for line in lines] == [1]  # the question was printed before the answer was refused
    assert stderr.splitlines() == [
        "error: the answer does not match the form",
        "  environment: must be one of: staging, production",
        "  confirm: is required",
    ]


def test_wait_leaves_a_pushed_link_to_the_server_which_says_when_its_flow_is_done(tmp_path: Path) -> None:
    old_server = shlex.join([str(sdk1.install()), str(sdk1.SERVER)])
    args = '{"site": "crm", "done_after_ms": 300}'
    status, (asked, end), stderr = call(
        tmp_path, "connect", "--command", old_server, "--args", args, "--elicit", "wait"
    )
    assert status == 0, stderr
    assert asked["inputRequests"]["pushed"]["params"]["url"].startswith("https://crm.example/connect/")
    assert asked["answers"] == {"pushed": {"action": "wait", "content": None}}
    assert (end["status"], text_of(end)) == ("completed", "crm: accept")  # nobody answered it but the server


def test_wait_for_a_question_that_is_no_link_is_refused_naming_it(tmp_path: Path) -> None:
    status, [asked], stderr = deploy(tmp_path, "wait")
    assert status == 1
    assert asked["answers"] == {"target": {"action": "wait", "content": None}}
    assert stderr.strip() == "error: --elicit wait: question 'target' is not a link (mode url)"


SCRIPT = """\
server:
  command: {deployer}
  env: {{DEPLOY_STATE_KEY: "{key}"}}
calls:
  - name: deploys to staging
    tool: deploy
    args: {{service: auth-service}}
    elicit: ['accept:{{"environment": "staging", "confirm": true}}']
    expect:
      asked: ["version 2.4.1"]
      contains: ["deployed to staging"]
  - tool: deploy
    args: {{service: auth-service}}
    elicit: [decline]
    expect: {{contains: ["not started (decline)"]}}
  - name: waits when the answers run out
    tool: deploy
    args: {{service: auth-service}}
    expect: {{status: awaiting_input}}
"""


def test_a_script_of_calls_passes_and_a_wrong_expectation_fails_naming_what_differed(tmp_path: Path) -> None:
    script = tmp_path / "deploy.yaml"
    text = SCRIPT.format(deployer=DEPLOYER, key=STATE_KEY.split("=", 1)[1])
    script.write_text(text)
    url = f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    passed = console("test", str(script), url=url, cwd=tmp_path)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines() == [
        "ok   deploys to staging",
        "ok   deploy",
        "ok   waits when the answers run out",
        "3 passed, 0 failed",
    ]
    script.write_text(
        text.replace('contains: ["not started (decline)"]', 'contains: ["deployed"], error: true')
    )
    failed = console("test", str(script), url=url, cwd=tmp_path)
    assert failed.returncode == 1
    assert failed.stdout.splitlines()[1] == (
        "FAIL deploy: isError False, expected True; "
        "result 'Deployment not started (decline).' lacks 'deployed'"
    )
    assert failed.stdout.splitlines()[-1] == "2 passed, 1 failed"


def test_a_script_that_is_not_valid_names_each_wrong_field(tmp_path: Path) -> None:
    script = tmp_path / "bad.yaml"
    url = f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    script.write_text(
        "server: {url: http://127.0.0.1:9/mcp, command: x}\ncalls: [{tool: a, expect: {status: nah}}]\n"
    )
    refused = console("test", str(script), url=url, cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: {script} is not a valid script",
        "  server: give exactly one of name, url and command",
        "  calls.0.expect: status must be one of completed, failed, interrupted, abandoned, declined, "
        "cancelled, awaiting_input",
    ]
    script.write_text("server: [\n")
    assert console("test", str(script), url=url, cwd=tmp_path).stderr.strip() == (
        f"error: {script} is not valid YAML (line 2)"
    )
    script.write_text("server: {command: x}\ncalls: [{tool: a, elicit: [maybe]}]\n")
    assert console("test", str(script), url=url, cwd=tmp_path).stderr.splitlines()[1] == (
        "  calls.0.elicit: --elicit 'maybe': use accept, accept:{JSON}, decline, cancel or wait"
    )
