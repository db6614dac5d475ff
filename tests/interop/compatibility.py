"""The compatibility table of docs/compatibility.md: one row per foreign MCP server or client, with the
protocol it spoke to the console and what works, each claim backed by the interop tests it names.
tests/interop/test_compatibility.py holds the file equal to `render()` and every named test collected.

Versions are read from the pins (tests/interop/foreign.py, tests/interop/npm/package.json), never repeated.

    python -m tests.interop.compatibility > docs/compatibility.md
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib.metadata import version as installed_version
from pathlib import Path

from tests.interop.foreign import NPM_FOLDER, PYTHON_ENVS

REPO = Path(__file__).resolve().parents[2]
SERVERS = "tests/interop/test_servers.py::"
CLIENTS = "tests/interop/test_clients.py::"
AT_ONCE = "test_a_client_lists_the_tools_and_a_plain_call_completes"
AT_GATE = "test_a_clients_call_waits_at_a_gate_until_an_approver_approves_it"
SDK_SERVER = "test_an_sdk_server_answers_a_call_and_a_form_question_a_person_answers"
FASTMCP4 = "tests/interop/test_fastmcp4.py::"
ROOTS = "tests/interop/test_filesystem_roots.py::"
LINKS = "tests/interop/test_links_required.py::"
WITHDRAWALS = "tests/gateway/test_withdrawals.py::"
REFUSED = "tests/gateway/test_refused_answers.py::"
INSPECTOR_WAITS = "tests/gateway/test_inspector_waits.py::"
LEFT = "tests/gateway/test_left_calls.py::"


@dataclass(frozen=True)
class Row:
    role: str  # "server" (behind the console) or "client" (an agent at the gateway)
    package: str  # as its registry names it
    protocol: str
    works: str  # what the tests show; "not yet: ..." for what they saw fail
    tests: tuple[str, ...]  # test ids, relative to the repository


def client_tests(param: str) -> tuple[str, ...]:
    return (f"{CLIENTS}{AT_ONCE}[{param}]", f"{CLIENTS}{AT_GATE}[{param}]")


ROWS = (
    Row(
        "server",
        "@modelcontextprotocol/server-filesystem",
        "2025-11-25",
        "stdio; tools listed; list_directory and read_text_file; its `roots/list` right after connecting "
        "gets the admin's roots (none: an empty list), and a change of roots reaches the running process; "
        "through the gateway, on a 2025-11-25 session declaring roots, it gets that agent's own roots on a "
        "connection of the session (never another agent's) and their change, unless an admin set roots",
        (
            f"{SERVERS}test_server_filesystem_lists_a_folder_and_reads_a_file",
            f"{ROOTS}test_the_admins_roots_replace_the_servers_folders_and_a_change_reaches_the_same_process[sqlite]",
            f"{ROOTS}test_through_the_gateway_each_agents_session_gives_the_server_its_own_roots_and_their_change[sqlite]",
            f"{ROOTS}test_through_the_gateway_the_admins_roots_apply_rather_than_the_agents[sqlite]",
            f"{ROOTS}test_another_user_who_sends_an_agents_session_id_is_refused_and_the_agents_roots_stay[sqlite]",
        ),
    ),
    Row(
        "server",
        "@modelcontextprotocol/server-memory",
        "2025-11-25",
        "stdio; tools listed; create_entities, then open_nodes reads it back",
        (f"{SERVERS}test_server_memory_creates_an_entity_and_reads_it_back",),
    ),
    Row(
        "server",
        "mcp-server-time",
        "2026-07-28",
        "stdio; tools listed; get_current_time in a named zone",
        (f"{SERVERS}test_mcp_server_time_tells_the_time_in_a_fixed_zone",),
    ),
    Row(
        "server",
        "mcp-server-fetch",
        "2026-07-28",
        "stdio; tools listed; fetch of a page (a loopback address needs `--allow-private-ips`)",
        (f"{SERVERS}test_mcp_server_fetch_fetches_a_page_on_loopback",),
    ),
    Row(
        "server",
        "mcp-server-git",
        "2026-07-28",
        "stdio; tools listed; git_status and git_log of a repository",
        (f"{SERVERS}test_mcp_server_git_reports_status_and_log",),
    ),
    Row(
        "server",
        "mcp-server-sqlite",
        "2025-11-25",
        "stdio; tools listed; create_table, write_query, read_query (needs mcp 1.x installed beside it)",
        (f"{SERVERS}test_mcp_server_sqlite_creates_a_table_and_queries_it",),
    ),
    Row(
        "server",
        "fastmcp@2",
        "2025-11-25",
        "stdio; tools listed; a plain tool; a form question (`ctx.elicit`) a person answers",
        (f"{SERVERS}{SDK_SERVER}[fastmcp2]",),
    ),
    Row(
        "server",
        "fastmcp@4",
        "2026-07-28",
        "stdio and HTTP; tools listed; a plain tool; link questions it asks again on each retry, with "
        "`console call --elicit wait`. It refuses a pushed form question (`ctx.elicit`) on 2026-07-28: "
        "`console servers test` recommends pinning it to 2025-11-25 (`--protocol-version`), and pinned, a "
        "person answers the question",
        (
            f"{SERVERS}test_a_fastmcp_4_server_answers_a_call",
            f"{FASTMCP4}test_servers_test_recommends_the_pin_and_the_pinned_server_asks_people[sqlite]",
            f"{FASTMCP4}test_console_call_waits_for_a_link_the_server_finishes_itself_retrying_on_2026_07_28",
        ),
    ),
    Row(
        "server",
        "mcp@1.12",
        "2025-06-18",
        "stdio; tools listed; a plain tool; a form question pushed mid-call that a person answers",
        (f"{SERVERS}{SDK_SERVER}[mcp112]",),
    ),
    Row(
        "server",
        "mcp@1.30",
        "2025-11-25",
        "stdio; tools listed; a plain tool; a form question pushed mid-call that a person answers; "
        "`URLElicitationRequiredError` (-32042) becomes the run owner's link question and the call is sent "
        "again once it is done, by the owner or by the server's `notifications/elicitation/complete`",
        (
            f"{SERVERS}{SDK_SERVER}[mcp130]",
            f"{LINKS}test_a_required_link_is_the_owners_question_and_the_call_is_sent_again_once_it_is_done[sqlite]",
            f"{LINKS}test_the_servers_done_notice_for_a_required_link_sends_the_call_again_by_itself[sqlite]",
        ),
    ),
    Row(
        "client",
        "mcp@2",
        "2026-07-28",
        "tools listed; a plain call; a call waiting at a gate, with progress naming whom it waits for; "
        "a call it stops waiting for is withdrawn; an answer that does not fit gets -32602 naming the field",
        (
            *client_tests("python-sdk-2"),
            f"{WITHDRAWALS}test_a_2026_agent_that_stops_waiting_leaves_nothing_to_run[sqlite]",
            f"{REFUSED}test_a_value_out_of_the_forms_bounds_gets_an_mcp_python_client_an_error_naming_the_field[sqlite]",
        ),
    ),
    Row(
        "client",
        "mcp@1.30",
        "2025-11-25",
        "tools listed; a plain call; a call waiting at a gate, with progress naming whom it waits for; "
        "an answer that is no elicitation result gets -32602 naming the field",
        (
            *client_tests("python-sdk-1.30"),
            f"{REFUSED}test_an_answer_that_is_no_elicit_result_fails_a_2025_11_25_call_naming_the_field[sqlite]",
        ),
    ),
    Row(
        "client",
        "@modelcontextprotocol/sdk",
        "2025-11-25",
        "tools listed; a plain call; a call waiting at a gate, with progress (`resetTimeoutOnProgress`); "
        "a request it cancels at its timeout (`notifications/cancelled`) withdraws the call",
        (
            *client_tests("typescript-sdk"),
            f"{WITHDRAWALS}test_a_typescript_sdk_agent_whose_request_timed_out_leaves_nothing_to_run[sqlite]",
        ),
    ),
    Row(
        "client",
        "fastmcp@2",
        "2025-11-25",
        "`Client(config)` with `mcpServers` and headers: tools listed; a plain call; "
        "a call waiting at a gate; a link it accepts with empty content; a form answer that does not fit "
        "gets -32602 naming the field",
        (
            *client_tests("fastmcp-2"),
            f"{REFUSED}test_a_link_accepted_with_an_empty_content_by_fastmcp_completes_the_call[sqlite-fastmcp-2]",
            f"{REFUSED}test_a_form_answer_that_does_not_fit_gets_fastmcp_an_error_naming_the_field_and_ends_the_call"
            "[sqlite-fastmcp-2]",
        ),
    ),
    Row(
        "client",
        "fastmcp@4",
        "2026-07-28",
        "`Client(config)` with `mcpServers` and headers: tools listed; a plain call; "
        "a call waiting at a gate; a link it accepts with empty content; a form answer that does not fit "
        "gets -32602 naming the field",
        (
            *client_tests("fastmcp-4"),
            f"{REFUSED}test_a_link_accepted_with_an_empty_content_by_fastmcp_completes_the_call[sqlite-fastmcp-4]",
            f"{REFUSED}test_a_form_answer_that_does_not_fit_gets_fastmcp_an_error_naming_the_field_and_ends_the_call"
            "[sqlite-fastmcp-4]",
        ),
    ),
    Row(
        "client",
        "@modelcontextprotocol/inspector",
        "2026-07-28 (`--protocol-era modern`); 2025-11-25 by default",
        "`--cli` on Node 22, as the docs' example runs it (`--protocol-era modern`): tools listed; a plain "
        "call; a call waiting at a gate, as a task it polls, answered after its fixed 60 s request timeout. "
        "On 2025-11-25 a call waiting at a gate is held on its session (never a task result); when the "
        "Inspector gives up at 60 s or is stopped, without cancelling, and does not come back within "
        "`CONSOLE_GATEWAY_RETURN_SECONDS`, the call is withdrawn and an approver's later answer runs nothing",
        (
            *client_tests("inspector-cli"),
            f"{INSPECTOR_WAITS}test_an_inspector_speaking_2026_gets_an_answer_given_after_its_request_timeout[sqlite]",
            f"{LEFT}test_an_inspector_stopped_while_its_call_waits_leaves_nothing_to_run[sqlite]",
            f"{LEFT}test_an_inspector_that_gave_up_at_its_request_timeout_leaves_nothing_to_run[sqlite]",
            f"{WITHDRAWALS}test_the_inspector_gets_the_result_of_a_call_that_waited_past_when_a_task_would_have_come[sqlite]",
        ),
    ),
)


def pinned_versions() -> dict[str, str]:
    """Each pinned package's version: npm names from package.json, PyPI names from PYTHON_ENVS,
    "<name>@<major>" for the environments named after one (fastmcp-2: fastmcp@2), and "mcp@2", the console's
    own SDK, as installed."""
    npm: dict[str, str] = json.loads((NPM_FOLDER / "package.json").read_text())["dependencies"]
    versions = {**npm, "mcp@2": installed_version("mcp")}
    for env, requirements in PYTHON_ENVS.items():
        for requirement in requirements:
            name, _, version = requirement.partition("==")
            versions.setdefault(name, version)
            if env.startswith(f"{name}-"):
                versions[f"{name}@{env.removeprefix(f'{name}-')}"] = version
    return versions


def render() -> str:
    versions = pinned_versions()
    lines = [
        "# Compatibility",
        "",
        "MCP servers and clients nobody here wrote, as the interop tests run them with the console",
        "(generated from `tests/interop/compatibility.py`: `python -m tests.interop.compatibility` writes",
        "it). Each row names the tests that show what works.",
        "A server runs behind the console (added over stdio); a client is an agent at the gateway's `/mcp`",
        "with a bearer token. The protocol is the one it spoke with the console.",
        "",
        "| server or client | package | version | protocol | what works | tests |",
        "|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        package = row.package.rsplit("@", 1)[0] if row.package.rsplit("@", 1)[0] else row.package
        tests = "<br>".join(f"`{test.split('::', 1)[1]}`" for test in row.tests)
        lines.append(
            f"| {row.role} | `{package}` | {versions[row.package]} | {row.protocol} | {row.works} | {tests} |"
        )
    return "\n".join(lines) + "\n"


def written() -> Path:
    return REPO / "docs" / "compatibility.md"


if __name__ == "__main__":
    sys.stdout.write(render())
