"""`console demo` as a new user meets it: a clean banner whose links open in a browser, the four users it
names, fresh secrets each run, a quiet Ctrl+C, and nothing of it for git to pick up."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from bs4 import Tag

from console.demo.seed import new_passwords
from tests.harness import form_fields, html, one, text
from tests.processes import running_demo

REPO = Path(__file__).resolve().parent.parent
CONSOLE = [sys.executable, "-m", "console.cli"]
USERS = {"dev", "lead", "ops", "admin"}
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")
GIT = shutil.which("git")
MAIL_SECONDS = 20.0


def demo_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONSOLE_")}
    return env | {"CONSOLE_DISPATCH_POLL_SECONDS": "0.2"}


def sign_in(browser: httpx.Client, name: str, password: str) -> None:
    fields = form_fields(one(html(browser.get("/login")), 'form[action="/login"]'))
    signed_in = browser.post("/login", data={**fields, "name": name, "password": password})
    assert signed_in.status_code == 303, signed_in.text


@pytest.mark.slow
def test_the_demo_banner_links_the_question_page_and_names_every_user_without_library_logs(
    tmp_path: Path,
) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env(), with_stderr=True) as demo:
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

        with httpx.Client(base_url=demo.url, timeout=30) as browser:
            hint = one(html(browser.get("/login")), "#demo-hint")
            assert {text(code) for code in hint.select("code")} >= USERS
            sign_in(browser, "lead", demo.passwords["lead"])
            question = browser.get(link[1])
            assert question.status_code == 200
            assert "auth-service" in text(one(html(question), "h1"))
            gated = html(browser.get(gate[1]))
            assert text(one(gated, "h1")) == "Approve calling deploy on deployer?"
            assert '"production"' in text(one(gated, ".arguments-table"))
    assert demo.process.returncode == 130
    assert [line for line in demo.ending if "Traceback" in line or LOG_LINE.match(line)] == []


@pytest.mark.slow
def test_dev_connects_team_notes_from_the_waiting_call_and_it_completes_with_devs_token(
    tmp_path: Path,
) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env()) as demo:
        [notes_line] = [line for line in demo.banner if "Team notes is behind OAuth" in line]
        question_path = httpx.URL(notes_line.rsplit(" ", 1)[1]).path
        assert question_path.startswith("/elicitations/"), notes_line
        with httpx.Client(base_url=demo.url, timeout=30) as browser, httpx.Client(timeout=30) as there:
            sign_in(browser, "dev", demo.passwords["dev"])
            agent = {"Authorization": f"Bearer {demo.token}"}
            question = browser.get(f"/api/v1{question_path}", headers=agent).json()
            assert question["kind"] == "connect", question
            assert question["message"].startswith("Connect notes: you will sign in at 127.0.0.1")
            page = html(browser.get(question_path))
            connect = one(page, "form#connect-form")
            to_notes = browser.post(str(connect["action"]), data=form_fields(connect))
            assert to_notes.status_code == 200, to_notes.text
            authorize = str(one(html(to_notes), "main a")["href"])
            login = there.get(there.get(authorize).headers["location"])
            back = there.post(
                str(login.url.join("/login")), data={**form_fields(one(html(login), "form")), "name": "dev"}
            )
            assert back.status_code == 302, back.text
            callback = httpx.URL(back.headers["location"])
            assert str(callback).startswith(f"{demo.url}/oauth/callback?")
            done = browser.get(f"{callback.path}?{callback.query.decode()}")
            assert done.status_code == 303, done.text
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


@pytest.mark.slow
def test_the_approvers_find_the_deploy_question_in_their_demo_mailbox_and_the_requester_does_not(
    tmp_path: Path,
) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env()) as demo:
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


@pytest.mark.slow
def test_running_the_demo_again_revokes_the_last_runs_token(tmp_path: Path) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env()) as first:
        with httpx.Client(base_url=first.url, timeout=30) as api:
            mine = api.get("/api/v1/elicitations", headers={"Authorization": f"Bearer {first.token}"})
        assert mine.status_code == 200
    with running_demo(CONSOLE, tmp_path, demo_env()) as second, httpx.Client(base_url=second.url) as api:
        for token, status in ((first.token, 401), (second.token, 200)):
            answer = api.get("/api/v1/elicitations", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == status, token
    assert first.passwords != second.passwords


@pytest.mark.slow
@pytest.mark.skipif(GIT is None, reason="asks git what it ignores")
def test_every_file_the_demo_leaves_in_its_folder_is_git_ignored(tmp_path: Path) -> None:
    with running_demo(CONSOLE, tmp_path, demo_env()):
        pass
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
