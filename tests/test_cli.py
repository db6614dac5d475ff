"""The `console` command as an operator uses it, on a fresh SQLite file and on PostgreSQL."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 60


def console(*args: str, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONSOLE_DATABASE_URL": url}
    return subprocess.run(
        [sys.executable, "-m", "console.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_cli_sets_up_a_team_with_users_tokens_and_servers(database_url: str, tmp_path: Path) -> None:
    def ok(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    ok("teams", "add", "platform")
    ok("users", "add", "alice", "--team", "platform", "--role", "approver", "--password", "pw-alice-123")
    ok("users", "add", "bob", "--team", "platform", "--role", "member")
    token = ok("tokens", "create", "bob", "--team", "platform")
    assert re.fullmatch(r"mcpc_[A-Za-z0-9_-]{43}\n", token)  # only the token, nothing else
    [listed] = ok("tokens", "list", "bob").splitlines()
    token_id, team, name, *_rest, state = listed.split("\t")
    assert (team, name, state) == ("platform", "cli", "active")
    assert token.strip() not in listed
    assert ok("tokens", "revoke", token_id) == f"token {token_id} revoked\n"
    assert ok("tokens", "list", "bob").split("\t")[-1].startswith("revoked")
    ok(
        "servers",
        "add",
        "deployer",
        "--team",
        "platform",
        "--command",
        "python -m console.demo.deployer",
        "--env",
        "DEPLOY_STATE_KEY=0123456789abcdef0123456789abcdef",
    )
    ok(
        "servers",
        "add",
        "remote",
        "--team",
        "platform",
        "--url",
        "https://mcp.example.com/mcp",
        "--header",
        "X-Api-Key=secret-value",
    )
    listing = ok("servers", "list").splitlines()
    assert listing == [
        "platform\tdeployer\tstdio\tpython -m console.demo.deployer",
        "platform\tremote\thttp\thttps://mcp.example.com/mcp",
    ]
    assert "secret-value" not in "\n".join(listing)


def test_cli_refuses_bad_input_with_a_clear_message(database_url: str, tmp_path: Path) -> None:
    assert console("teams", "add", "platform", url=database_url, cwd=tmp_path).returncode == 0
    duplicate = console("teams", "add", "platform", url=database_url, cwd=tmp_path)
    assert duplicate.returncode == 1
    assert duplicate.stderr.strip() == "error: team 'platform' already exists"
    unknown = console("tokens", "create", "nobody", "--team", "platform", url=database_url, cwd=tmp_path)
    assert unknown.returncode == 1
    assert unknown.stderr.strip() == "error: no user 'nobody'"
    bad_url = console(
        "servers",
        "add",
        "x",
        "--team",
        "platform",
        "--url",
        "file:///etc/passwd",
        url=database_url,
        cwd=tmp_path,
    )
    assert bad_url.returncode == 1
    assert "http(s)" in bad_url.stderr


def test_every_command_has_help(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    top = console("--help", url=url, cwd=tmp_path)
    assert top.returncode == 0
    for command in ("serve", "worker", "migrate", "demo", "teams", "users", "tokens", "servers"):
        assert command in top.stdout
        assert console(command, "--help", url=url, cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("command", [["migrate"], ["servers", "list"]])
def test_commands_migrate_an_empty_sqlite_file_on_first_use(command: list[str], tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    done = console(*command, url=url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fresh.db").stat().st_size > 0
