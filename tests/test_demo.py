"""`console demo` as a new user meets it: a clean banner whose links open in a browser, the four users it
names, fresh passwords each run and one agent token, a quiet Ctrl+C within seconds whatever is open, a
restart that finds its waiting questions' servers and dev's connections again, `--reset`, and nothing of
it for git to pick up.

A demo takes many seconds to start, so the tests that only look at one and connect dev's notes share one
run (`shared_demo`): none of them answers a question another reads, and each reads only mail and pages
that the others leave as they were. The tests that stop, restart or reset a demo run their own."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from email import message_from_string
from email.message import Message
from email.policy import default
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from bs4 import Tag
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent

from console.demo.seed import new_passwords
from tests.gateway.agents import Heard
from tests.harness import WAIT, form_fields, html, one, text
from tests.processes import Demo, running_demo

REPO = Path(__file__).resolve().parent.parent
CONSOLE = [sys.executable, "-m", "console.cli"]
USERS = {"dev", "lead", "ops", "admin"}
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")
GIT = shutil.which("git")
MAIL_SECONDS = 20.0
STOP_SECONDS = 5.0  # what Ctrl+C may take, whatever is open
LINKS = re.compile(r"https?://[^\s<>\"')]+")
GATED = {"service": "checkout", "environment": "production"}


def demo_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}
    return env | {"CONSOLE_DISPATCH_POLL_SECONDS": "0.2"}


@dataclass(frozen=True)
class SharedDemo:
    demo: Demo
    folder: Path  # where it runs: its database, keys and kept mail


@pytest.fixture(scope="module")
def shared_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedDemo]:
    """One `console demo` (its stderr in the banner, as a terminal shows it) for the module's tests that
    neither stop it nor answer the deploy questions."""
    folder = tmp_path_factory.mktemp("demo")
    with running_demo(CONSOLE, folder, demo_env(), with_stderr=True) as demo:
        yield SharedDemo(demo, folder)


def sign_in(browser: httpx.Client, name: str, password: str) -> None:
    fields = form_fields(one(html(browser.get("/login")), 'form[action="/login"]'))
    signed_in = browser.post("/login", data={**fields, "name": name, "password": password})
    assert signed_in.status_code == 303, signed_in.text


async def async_sign_in(browser: httpx.AsyncClient, name: str, password: str) -> None:
    fields = form_fields(one(html(await browser.get("/login")), 'form[action="/login"]'))
    signed_in = await browser.post("/login", data={**fields, "name": name, "password": password})
    assert signed_in.status_code == 303, signed_in.text


def mail_text(part: Message) -> str:
    payload = part.get_payload(decode=True)
    return payload.decode() if isinstance(payload, bytes) else ""


def connect_notes(
    demo: Demo, browser: httpx.Client, there: httpx.Client, question_path: str
) -> httpx.Response:
    """dev (signed in on `browser`) presses Connect on the notes question and signs in at Team notes;
    the console's answer to the OAuth callback."""
    connect = one(html(browser.get(question_path)), "form#connect-form")
    to_notes = browser.post(str(connect["action"]), data=form_fields(connect))
    assert to_notes.status_code == 200, to_notes.text
    authorize = str(one(html(to_notes), "main a")["href"])
    login = there.get(there.get(authorize).headers["location"])
    sign_in_page = html(login)
    assert text(one(sign_in_page, ".client strong")) == "Approval console"
    granted = [text(li) for li in sign_in_page.select("ul.scopes li")]
    assert "notes:read — read your notes" in granted
    assert [line for line in granted if " — " not in line] == []  # every scope in words
    back = there.post(
        str(login.url.join("/login")), data={**form_fields(one(html(login), "form")), "name": "dev"}
    )
    assert back.status_code == 302, back.text
    callback = httpx.URL(back.headers["location"])
    assert str(callback).startswith(f"{demo.url}/oauth/callback?")
    done = browser.get(f"{callback.path}?{callback.query.decode()}")
    assert done.status_code == 303, done.text
    return done


def mail_of(browser: httpx.Client, wanted: str) -> list[Tag]:
    """The messages on the signed-in person's mailbox page, once one holds `wanted` (the demo's mail
    server is another process: its mailbox is read again until then, bounded)."""
    deadline = time.monotonic() + MAIL_SECONDS
    while True:
        page = browser.get("/demo/mailbox")
        assert page.status_code == 200, page.text
        messages = html(page).select("article.mail")
        if any(wanted in str(m) for m in messages) or time.monotonic() > deadline:
            return messages
        time.sleep(0.1)


def url_questions(demo: Demo, api: httpx.Client) -> list[dict[str, Any]]:
    """The URL-mode questions dev's agent sees waiting (the tracker asks dev to connect so)."""
    listed = api.get("/api/v1/elicitations", headers={"Authorization": f"Bearer {demo.token}"})
    assert listed.status_code == 200, listed.text
    return [q for q in listed.json()["items"] if q["mode"] == "url"]


def deploy_links(demo: Demo) -> list[str]:
    """The links the banner gives to the two waiting deploys' questions."""
    return re.findall(
        r"^  a .*deploy of .*: \S+(/elicitations/[0-9a-f]+)$", "\n".join(demo.banner), flags=re.M
    )


def demo_tokens(folder: Path) -> list[str]:
    listed = subprocess.run(
        [*CONSOLE, "tokens", "list", "dev"],
        cwd=folder,
        env=demo_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [
        line for line in listed.stdout.splitlines() if "\tdemo agent\t" in line and line.endswith("active")
    ]


@pytest.mark.slow
def test_a_restarted_demo_keeps_its_token_its_questions_servers_and_devs_notes_connection(
    tmp_path: Path,
) -> None:
    with (
        running_demo(CONSOLE, tmp_path, demo_env()) as first,
        httpx.Client(base_url=first.url, timeout=30) as browser,
        httpx.Client(timeout=30) as there,
    ):
        sign_in(browser, "dev", first.passwords["dev"])
        [notes_line] = [line for line in first.banner if "Team notes is behind OAuth" in line]
        question_path = httpx.URL(notes_line.rsplit(" ", 1)[1]).path
        connect_notes(first, browser, there, question_path)
        agent = {"Authorization": f"Bearer {first.token}"}
        asked = browser.get(f"/api/v1{question_path}", headers=agent).json()
        whoami = browser.get(f"/api/v1/calls/{asked['call_id']}", params={"wait": 20}, headers=agent)
        assert whoami.json()["status"] == "completed", whoami.text
        [tracker_question] = url_questions(first, browser)

    with (
        running_demo(CONSOLE, tmp_path, demo_env()) as second,
        httpx.Client(base_url=second.url, timeout=30) as api,
        httpx.Client(timeout=30) as tracker,
    ):
        assert second.token == first.token
        assert len(deploy_links(first)) == 2, first.banner
        assert deploy_links(second) == deploy_links(first)  # the same waiting calls, none started again
        assert "dev connected it in an earlier run" in "\n".join(second.banner)
        assert len(demo_tokens(tmp_path)) == 1
        agent = {"Authorization": f"Bearer {second.token}"}

        # dev's notes connection survived: a new call to Team notes completes without connecting again.
        run = api.post("/api/v1/runs", json={"team": "platform", "title": "notes"}, headers=agent)
        assert run.status_code == 201, run.text
        notes = api.post(
            f"/api/v1/runs/{run.json()['id']}/calls",
            params={"wait": 20},
            json={"server": "notes", "method": "tools/call", "params": {"name": "whoami", "arguments": {}}},
            headers=agent,
        )
        assert notes.json()["status"] == "completed", notes.text
        assert notes.json()["result"]["content"][0]["text"] == "signed in as dev"

        # The tracker question asked before the restart: its link reaches the tracker, and answering completes
        # the call.
        asked = api.get(f"/api/v1/elicitations/{tracker_question['id']}", headers=agent).json()
        link = asked["url"]
        assert link.startswith("http://127.0.0.1:"), asked
        waiting = api.get(f"/api/v1/calls/{asked['call_id']}", headers=agent).json()
        consent = api.post(
            f"/api/v1/elicitations/{asked['id']}/answer", json={"action": "accept"}, headers=agent
        )
        assert consent.status_code == 200, consent.text
        reasked = api.get(
            f"/api/v1/calls/{asked['call_id']}",
            params={"wait": 20, "after_round": waiting["round"]},
            headers=agent,
        ).json()
        [again] = reasked["pending"]
        form = tracker.get(link)
        assert form.status_code == 200, form.text
        connected = tracker.post(
            str(form.url.join(str(one(html(form), "form")["action"]))),
            data={
                **form_fields(one(html(form), "form")),
                "username": "dev",
                "password": second.passwords["dev"],
            },
        )
        assert connected.status_code == 200, connected.text
        done = api.post(
            f"/api/v1/elicitations/{again['id']}/answer", json={"action": "accept"}, headers=agent
        )
        assert done.status_code == 200, done.text
        call = api.get(f"/api/v1/calls/{asked['call_id']}", params={"wait": 20}, headers=agent).json()
        assert call["status"] == "completed", call
        assert call["result"]["content"][0]["text"] == "Issue created for dev: Login is slow"


@pytest.mark.slow
def test_demo_reset_starts_afresh(tmp_path: Path) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env()) as first:
        pass
    with running_demo(CONSOLE, tmp_path, demo_env(), options=("--reset",)) as second:
        with httpx.Client(base_url=second.url, timeout=30) as api:
            for token, status in ((first.token, 401), (second.token, 200)):
                answer = api.get("/api/v1/elicitations", headers={"Authorization": f"Bearer {token}"})
                assert answer.status_code == status, token
        assert deploy_links(second) != deploy_links(first)  # new waiting calls in a new database
    assert len(demo_tokens(tmp_path)) == 1


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="asks git what it ignores")
def test_ctrl_c_stops_the_demo_quietly_and_every_file_it_leaves_in_its_folder_is_git_ignored(
    tmp_path: Path,
) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env(), with_stderr=True) as demo:
        pass
    assert demo.process.returncode == 130
    assert [line for line in demo.ending if "Traceback" in line or LOG_LINE.match(line)] == []
    left = sorted(path.name for path in tmp_path.iterdir())
    assert {"console.db", "console-demo.secret", "console-demo-audit.key"} <= set(left)
    checked = subprocess.run(
        [str(GIT), "check-ignore", "--no-index", "--verbose", "--non-matching", *left],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    not_ignored = [line.split("\t")[1] for line in checked.stdout.splitlines() if line.startswith("::")]
    assert not_ignored == []


def test_generated_passwords_never_start_with_a_dash() -> None:
    drawn = [password for _ in range(2000) for password in new_passwords().values()]
    assert [p for p in drawn if p.startswith("-")] == []
    assert min(len(p) for p in drawn) >= 12


@pytest.mark.slow
@pytest.mark.anyio
async def test_ctrl_c_stops_the_demo_within_5_s_while_a_live_inbox_and_an_agents_held_call_are_open(
    tmp_path: Path,
) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env(), with_stderr=True) as demo:
        heard = Heard()
        told: list[CallToolResult] = []
        listening = anyio.Event()
        agent_headers = {"Authorization": f"Bearer {demo.token}"}
        async with (
            httpx.AsyncClient(base_url=demo.url, timeout=30) as browser,
            httpx2.AsyncClient(headers=agent_headers, timeout=httpx2.Timeout(30, read=60)) as http,
            Client(streamable_http_client(f"{demo.url}/mcp", http_client=http)) as agent,
            anyio.create_task_group() as tg,
        ):
            await async_sign_in(browser, "lead", demo.passwords["lead"])

            async def live_inbox() -> None:
                async with browser.stream("GET", "/inbox/events") as events:
                    assert events.status_code == 200
                    async for line in events.aiter_lines():
                        if line == ": listening":
                            listening.set()

            async def held_call() -> None:
                told.append(
                    await agent.call_tool("deployer__deploy", GATED, progress_callback=heard.progress)
                )

            tg.start_soon(live_inbox)
            tg.start_soon(held_call)
            with anyio.fail_after(WAIT):
                await listening.wait()
            await heard.question_id()  # the call waits for people, and the agent's request is held
            os.killpg(demo.process.pid, signal.SIGINT)
            began = time.monotonic()
            # The time the demo takes to stop is what is tested.
            await anyio.to_thread.run_sync(partial(demo.process.wait, timeout=STOP_SECONDS + 5))
            took = time.monotonic() - began
            with anyio.fail_after(WAIT):  # the answer was sent before the demo ended
                while not told:  # noqa: ASYNC110  # the agent's task appends it
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
    assert took < STOP_SECONDS, took
    assert demo.process.returncode == 130
    assert [line for line in demo.ending if "Traceback" in line or "Error" in line] == [], demo.ending
    # The console stopped under the agent: it was told where its call stands and how to wait again, and
    # the call was not withdrawn: it still waits for its answer.
    [result] = told
    said = "".join(part.text for part in result.content if isinstance(part, TextContent))
    assert "Nothing is lost" in said, said
    assert "console__await" in said, said
    with closing(sqlite3.connect(tmp_path / "console.db")) as database:
        held = database.execute("SELECT status FROM call WHERE params_json LIKE '%checkout%'").fetchall()
    assert held == [("awaiting_input",)]


def _demo_to_its_end(cwd: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    """`console demo` on a free port, run until it ends by itself (bounded)."""
    return subprocess.run(
        [*CONSOLE, "demo", "--port", "0", *options],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_the_demo_exits_with_1_and_names_the_background_loop_that_could_not_go_on(tmp_path: Path) -> None:
    env = demo_env() | {"CONSOLE_ENV": "test", "CONSOLE_TEST_FAULT": "housekeeping_fails"}
    ended = _demo_to_its_end(tmp_path, env)
    assert ended.returncode == 1, ended.stderr[-2000:]
    stopped = [line for line in ended.stdout.splitlines() if line.startswith("stopped: ")]
    assert stopped == ["stopped: dispatcher's housekeeping: RuntimeError: test fault housekeeping_fails"], (
        ended.stdout[-2000:]
    )


def test_demo_reset_refuses_to_delete_a_database_outside_its_folder(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "console.db").write_text("not the demo's to delete")
    env = demo_env() | {"CONSOLE_DATABASE_URL": f"sqlite+aiosqlite:///{elsewhere / 'console.db'}"}
    folder = tmp_path / "demo"
    folder.mkdir()
    refused = _demo_to_its_end(folder, env, "--reset")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines() == [
        "error: console demo --reset deletes only a SQLite database in this folder; CONSOLE_DATABASE_URL "
        "names "
        "another database"
    ], refused.stderr
    assert (elsewhere / "console.db").read_text() == "not the demo's to delete"


# The tests of the shared demo come last: it runs from the first of them to the module's end, and
# nothing else of the module should run beside it.


@pytest.mark.slow
def test_the_demo_banner_links_the_question_page_and_names_every_user_without_library_logs(
    shared_demo: SharedDemo,
) -> None:
    demo = shared_demo.demo
    banner = "\n".join(demo.banner)
    assert [line for line in demo.banner if LOG_LINE.match(line)] == []
    assert [line for line in demo.banner if "Warning" in line] == []  # its servers' too
    assert set(demo.passwords) == USERS
    assert [p for p in demo.passwords.values() if p.startswith("-")] == []
    link = re.search(r"^  a deploy of auth-service waits for an answer: (\S+)$", banner, flags=re.M)
    assert link, banner
    assert re.fullmatch(rf"{re.escape(demo.url)}/elicitations/[0-9a-f]+", link[1])
    gate = re.search(
        r"^  a production deploy of billing waits at its approval gate .*: (\S+)$", banner, flags=re.M
    )
    assert gate, banner
    assert f"agents connect to the MCP gateway at {demo.url}/mcp" in banner
    entry = banner[banner.index("    {") : banner.index("\n  a deploy of auth-service")]
    server = json.loads(entry)["mcpServers"]["approval-console"]
    assert server["url"] == f"{demo.url}/mcp"
    assert server["headers"] == {"Authorization": f"Bearer {demo.token}"}

    with httpx.Client(base_url=demo.url, timeout=30) as browser:
        hint = one(html(browser.get("/login")), "#demo-hint")
        assert {text(code) for code in hint.select("code")} >= USERS
        sign_in(browser, "lead", demo.passwords["lead"])
        question = browser.get(link[1])
        assert question.status_code == 200
        assert "auth-service" in text(one(html(question), "h1"))
        gated = html(browser.get(gate[1]))
        assert text(one(gated, "h1")) == "Deploy billing to production?"
        rows = [text(row) for row in gated.select("#arguments tbody tr")]
        assert rows == ["service billing", "environment production"]
        # What a real gate shows: the tool's annotations as badges, its description, and the edit form.
        badges = [text(badge) for badge in gated.select("#tool-hints .hint-badge")]
        assert badges == ["Destructive", "Not read-only", "Not idempotent", "Open world"]
        assert text(one(gated, ".tool-description")).startswith("Deploy the latest version of a service.")
        hints = text(one(gated, ".annotations"))
        for annotation in ("destructiveHint: true", "idempotentHint: false", "openWorldHint: true"):
            assert annotation in hints
        edit = one(gated, "#decision-form details.edit-arguments fieldset.answer")
        assert text(edit.select("legend")[0]).startswith("Arguments to send")
        assert edit.select('input:not([type="hidden"]), select')


@pytest.mark.slow
def test_dev_connects_team_notes_from_the_waiting_call_and_it_completes_with_devs_token(
    shared_demo: SharedDemo,
) -> None:
    demo = shared_demo.demo
    [notes_line] = [line for line in demo.banner if "Team notes is behind OAuth" in line]
    question_path = httpx.URL(notes_line.rsplit(" ", 1)[1]).path
    assert question_path.startswith("/elicitations/"), notes_line
    with httpx.Client(base_url=demo.url, timeout=30) as browser, httpx.Client(timeout=30) as there:
        sign_in(browser, "dev", demo.passwords["dev"])
        agent = {"Authorization": f"Bearer {demo.token}"}
        question = browser.get(f"/api/v1{question_path}", headers=agent).json()
        assert question["kind"] == "connect", question
        assert question["message"].startswith("Connect notes: you will sign in at 127.0.0.1")
        done = connect_notes(demo, browser, there, question_path)
        assert done.headers["location"] == f"/elicitations/{question['id']}"
        call = browser.get(f"/api/v1/calls/{question['call_id']}", params={"wait": 20}, headers=agent)
        assert call.json()["status"] == "completed", call.text
        assert call.json()["result"]["content"][0]["text"] == "signed in as dev"
        assert "connected at 127.0.0.1" in text(html(browser.get("/connections")))

        run = browser.post("/api/v1/runs", json={"team": "platform", "title": "notes"}, headers=agent)
        assert run.status_code == 201, run.text
        again = browser.post(
            f"/api/v1/runs/{run.json()['id']}/calls",
            params={"wait": 20},
            json={
                "server": "notes",
                "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}},
            },
            headers=agent,
        )
        assert again.json()["status"] == "completed", again.text


@pytest.mark.slow
def test_the_approvers_find_the_deploy_question_in_their_demo_mailbox_and_the_requester_does_not(
    shared_demo: SharedDemo,
) -> None:
    demo = shared_demo.demo
    banner = "\n".join(demo.banner)
    assert f"each user reads their mail at {demo.url}/demo/mailbox" in banner
    deploy = re.search(r"^  a deploy of auth-service waits for an answer: (\S+)$", banner, flags=re.M)
    assert deploy, banner
    deploy_path = httpx.URL(deploy.group(1)).path
    with (
        httpx.Client(base_url=demo.url, timeout=30) as lead,
        httpx.Client(base_url=demo.url, timeout=30) as dev,
    ):
        sign_in(lead, "lead", demo.passwords["lead"])
        sign_in(dev, "dev", demo.passwords["dev"])
        subject = "deployer: a question for dev's call to deploy"
        mails = [m for m in mail_of(lead, deploy_path) if text(one(m, ".mail-subject")) == subject]
        opened = {str(a["href"]) for m in mails for a in m.select("a")}
        assert deploy_path in opened, [text(m) for m in mails]
        assert lead.get(deploy_path).status_code == 200
        # dev asked for it and may not approve it (no self-approval): none of it in dev's mail.
        notes = "notes: a question for dev's call to whoami"
        devs = [text(one(m, ".mail-subject")) for m in mail_of(dev, notes)]
        assert notes in devs
        assert subject not in devs
    # Every link in every email names the console where it listens (no CONSOLE_BASE_URL is set).
    kept = (shared_demo.folder / "console-demo-mail").glob("*.json")  # each written aside, then renamed
    sent = [json.loads(path.read_text()) for path in kept]
    bodies = [message_from_string(kept["data"], policy=default) for kept in sent]
    links = {link for body in bodies for part in body.walk() for link in LINKS.findall(mail_text(part))}
    assert links
    assert {link for link in links if not link.startswith(f"{demo.url}/")} == set()
