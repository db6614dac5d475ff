"""The `console` command as an operator uses it, on a fresh SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from console.cli.servers import printable
from console.demo.tracker import running_tracker
from console.notify.channels import EVENTS
from tests.cli_runner import LONG_RUNNING, run_console
from tests.harness import MRTR_SERVER, SECRET_KEY
from tests.processes import read_lines

TIMEOUT = 60
# The two ways an operator starts the command: each is run once as a real process below.
ENTRY_POINTS = {
    "python -m console.cli": [sys.executable, "-m", "console.cli"],
    "console script": [str(Path(sys.executable).parent / "console")],  # pyproject.toml [project.scripts]
}


def console_env(url: str, secret_key: str | None, settings: dict[str, str]) -> dict[str, str]:
    """This environment with the database `url`, the secret key (or none) and `settings` added."""
    env = {**os.environ, "CONSOLE_DATABASE_URL": url}
    env.pop("CONSOLE_SECRET_KEY", None)
    if secret_key is not None:
        env["CONSOLE_SECRET_KEY"] = secret_key
    return env | settings


def console(
    *args: str, url: str, cwd: Path, secret_key: str | None = SECRET_KEY, **settings: str
) -> subprocess.CompletedProcess[str]:
    """`console ARGS` run to its end in this process; `settings` are extra environment variables."""
    return run_console(args, env=console_env(url, secret_key, settings), cwd=cwd)


def console_process(
    *args: str, url: str, cwd: Path, secret_key: str | None = SECRET_KEY, **settings: str
) -> subprocess.CompletedProcess[str]:
    """`python -m console.cli ARGS` as its own process, for the commands that serve until stopped."""
    return subprocess.run(
        [*ENTRY_POINTS["python -m console.cli"], *args],
        env=console_env(url, secret_key, settings),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_each_entry_point_runs_as_a_process_that_helps_and_uses_the_database(
    entry_point: str, tmp_path: Path
) -> None:
    env = console_env(f"sqlite+aiosqlite:///{tmp_path / 'console.db'}", SECRET_KEY, {})

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*ENTRY_POINTS[entry_point], *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    helped = run("--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.startswith("usage: console ")
    assert "The approval console for MCP elicitations." in helped.stdout
    added = run("teams", "add", "platform")  # a fresh SQLite file: migrated on first use
    assert (added.returncode, added.stdout, added.stderr) == (0, "team platform created\n", "")
    assert (tmp_path / "console.db").is_file()


def test_cli_sets_up_a_team_with_users_tokens_and_servers(database_url: str, tmp_path: Path) -> None:
    def ok(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    ok("teams", "add", "platform")
    ok("users", "add", "alice", "--team", "platform", "--role", "approver", "--password", "pw-alice-123")
    ok("users", "add", "bob", "--team", "platform", "--role", "member")
    created = console("tokens", "create", "bob", "--team", "platform", url=database_url, cwd=tmp_path)
    token = created.stdout
    assert re.fullmatch(r"mcpc_[A-Za-z0-9_-]{43}\n", token)  # only the token, nothing else
    [first_secret] = re.findall(
        r"webhook secret \(signs callbacks; shown once\): (whsec_\S+)", created.stderr
    )
    [listed] = ok("tokens", "list", "bob").splitlines()
    token_id, team, name, *_rest, state = listed.split("\t")
    assert (team, name, state) == ("platform", "cli", "active")
    assert token.strip() not in listed
    rotated = ok("tokens", "webhook-secret", token_id).strip()
    assert rotated.startswith("whsec_") and rotated != first_secret  # noqa: PT018
    nothing = console("tokens", "webhook-secret", "no-such-token", url=database_url, cwd=tmp_path)
    assert nothing.returncode == 1
    assert nothing.stderr.strip() == "error: no live token 'no-such-token'"
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
    no_key = console(
        *("servers", "add", "remote", "--team", "platform", "--url", "https://mcp.example.com/mcp"),
        *("--header", "X-Api-Key=secret-value"),
        url=database_url,
        cwd=tmp_path,
        secret_key=None,
    )
    assert no_key.returncode == 1
    assert "set CONSOLE_SECRET_KEY to store header or environment values" in no_key.stderr
    loopback = ("servers", "add", "local", "--team", "platform", "--url", "http://127.0.0.1:9/mcp")
    refused = console(*loopback, url=database_url, cwd=tmp_path)
    assert refused.returncode == 1
    assert "127.0.0.1 is a loopback address" in refused.stderr
    assert console(*loopback, "--internal", url=database_url, cwd=tmp_path).returncode == 0
    no_hold = console(
        "servers", "edit", "platform", "local", "--hold-seconds", "soon", url=database_url, cwd=tmp_path
    )
    assert no_hold.returncode == 1
    assert (
        no_hold.stderr.strip()
        .splitlines()[-1]
        .endswith("hold_seconds: a whole number of seconds from 1 to 604800, or empty")
    ), no_hold.stderr


def test_cli_refuses_a_server_name_that_could_make_gateway_names_ambiguous_and_lists_old_ones_as_such(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    server = ("--team", "platform", "--url", "http://127.0.0.1:9/mcp", "--internal")
    for name, problem in (
        ("hostile__b", "no '__' and no '_' at the end"),
        ("my.server", "only letters, digits, '-' and '_'"),
        ("console", "'console' is reserved"),
    ):
        refused = console("servers", "add", name, *server, url=sqlite_url, cwd=tmp_path)
        assert refused.returncode == 1
        assert refused.stderr.splitlines()[0] == "error: invalid server name"
        assert refused.stderr.splitlines()[1].startswith(f"  name: {problem}"), refused.stderr
    for name in ("hostile", "older"):
        assert console("servers", "add", name, *server, url=sqlite_url, cwd=tmp_path).returncode == 0
    with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:  # as registered before such names were refused
        db.execute("UPDATE mcp_server SET name = 'hostile__b' WHERE name = 'older'")
    listed = console("servers", "list", url=sqlite_url, cwd=tmp_path).stdout.splitlines()
    assert listed[0] == "platform\thostile\thttp\thttp://127.0.0.1:9/mcp"
    assert listed[1].startswith(
        "platform\thostile__b\thttp\thttp://127.0.0.1:9/mcp\tname may make names at /mcp"
    )
    assert listed[1].endswith("add the server again under another name")


def test_cli_registers_servers_behind_oauth_and_refuses_a_team_account_without_credentials(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    server = ("--team", "platform", "--url", "http://127.0.0.1:9/mcp", "--internal")
    assert (
        console("servers", "add", "notes", *server, "--oauth", url=sqlite_url, cwd=tmp_path).returncode == 0
    )

    def refused(*args: str, **settings: str) -> str:
        done = console(
            "servers",
            "add",
            "team-notes",
            *server,
            "--oauth-team",
            *args,
            url=sqlite_url,
            cwd=tmp_path,
            **settings,
        )
        assert done.returncode == 1, done.stdout
        last: str = done.stderr.strip().splitlines()[-1]
        return last

    assert refused().endswith("oauth_client_id: a team account needs the client registered for it")
    assert refused("--oauth-client-id", "svc").endswith(
        "oauth_client_secret: a team account needs its client's secret, private key or workload identity "
        "token file"
    )
    per_person = console(
        *("servers", "add", "wif", *server, "--oauth", "--oauth-client-id", "svc"),
        *("--oauth-workload-token-file", "token"),
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert per_person.returncode == 1
    assert per_person.stderr.strip().endswith(
        "oauth_workload_token_file: a workload identity token is for a team account"
    )
    assert refused("--oauth-client-id", "svc", "--oauth-client-secret-env", "NOT_SET_ANYWHERE").endswith(
        "oauth_client_secret: NOT_SET_ANYWHERE is not set"
    )
    key = ec.generate_private_key(ec.SECP256R1())
    public = tmp_path / "public.pem"
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    assert refused("--oauth-client-id", "svc", "--oauth-client-key-file", str(public)).endswith(
        "oauth_client_key: not a private key in PEM (EC P-256, RSA or Ed25519)"
    )
    private = tmp_path / "private.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    added = console(
        *("servers", "add", "team-notes", *server, "--oauth-team", "--oauth-client-id", "svc"),
        *("--oauth-client-key-file", str(private)),
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stderr
    workload = console(
        *("servers", "add", "wif-notes", *server, "--oauth-team", "--oauth-client-id", "workload"),
        *("--oauth-workload-token-file", "run/token"),  # read anew at each token request: not needed yet
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert workload.returncode == 0, workload.stderr
    with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
        [(client,)] = db.execute("SELECT oauth_client_json FROM mcp_server WHERE name = 'wif-notes'")
    assert json.loads(client)["workload_token_file"] == str(tmp_path / "run" / "token")
    listed = console("servers", "list", url=sqlite_url, cwd=tmp_path)
    assert "team-notes" in listed.stdout
    assert "PRIVATE KEY" not in listed.stdout + listed.stderr


def test_cli_sets_up_enterprise_managed_authorization_only_with_single_sign_on_and_a_secret(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    server = ("--team", "platform", "--url", "http://127.0.0.1:9/mcp", "--internal", "--oauth")
    client = ("--oauth-client-id", "console-at-notes", "--oauth-client-secret-env", "NOTES_SECRET")
    sso = {
        "CONSOLE_OIDC_ISSUER": "https://idp.example.com",
        "CONSOLE_OIDC_CLIENT_ID": "approval-console",
        "NOTES_SECRET": "s3cret-value",
    }

    def add(name: str, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
        return console("servers", "add", name, *server, *args, url=sqlite_url, cwd=tmp_path, **settings)

    without_sso = add("notes", "--oauth-enterprise", *client, NOTES_SECRET=sso["NOTES_SECRET"])
    assert without_sso.returncode == 1
    assert without_sso.stderr.strip().endswith(
        "oauth_enterprise: enterprise-managed authorization needs single sign-on (CONSOLE_OIDC_ISSUER) to be "
        "set up"
    )
    without_secret = add("notes", "--oauth-enterprise", "--oauth-client-id", "console-at-notes", **sso)
    assert without_secret.returncode == 1
    assert without_secret.stderr.strip().endswith(
        "oauth_enterprise: enterprise-managed authorization needs the client's secret"
    )
    added = add("notes", "--oauth-enterprise", *client, **sso)
    assert added.returncode == 0, added.stderr
    with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
        [(stored,)] = db.execute("SELECT oauth_client_json FROM mcp_server WHERE name = 'notes'")
    assert json.loads(stored)["enterprise"] is True
    assert "s3cret-value" not in stored
    off = console(
        *("servers", "edit", "platform", "notes", "--no-oauth-enterprise"),
        url=sqlite_url,
        cwd=tmp_path,
        **sso,
    )
    assert off.returncode == 0, off.stderr
    with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
        [(stored,)] = db.execute("SELECT oauth_client_json FROM mcp_server WHERE name = 'notes'")
    assert "enterprise" not in json.loads(stored)


def test_cli_sets_and_clears_a_users_email_and_refuses_one_that_is_not_an_address(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    added = console(
        *("users", "add", "ada", "--team", "platform", "--role", "member", "--email", "ada@example.com"),
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert added.returncode == 0, added.stderr
    assert "ada's email is ada@example.com" in added.stdout

    def stored() -> str | None:
        with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
            [(address,)] = db.execute("SELECT email FROM identity_user WHERE name = 'ada'")
        return cast(str | None, address)

    assert stored() == "ada@example.com"
    refused = console("users", "edit", "ada", "--email", "ada at example", url=sqlite_url, cwd=tmp_path)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].endswith("email: a plain address such as ada@example.com")
    assert stored() == "ada@example.com"
    unknown = console("users", "edit", "nobody", "--email", "n@example.com", url=sqlite_url, cwd=tmp_path)
    assert unknown.returncode == 1
    assert "no user 'nobody'" in unknown.stderr
    cleared = console("users", "edit", "ada", "--email", "", url=sqlite_url, cwd=tmp_path)
    assert cleared.returncode == 0, cleared.stderr
    assert stored() is None


def test_cli_adds_lists_and_removes_a_teams_channels_and_shows_a_webhook_secret_once(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    hook = "https://93.184.216.34/hooks/console"  # a public address: nothing is sent yet
    added = console("notify", "add", "platform", "--webhook", hook, url=sqlite_url, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    [secret] = re.findall(r"signing secret \(shown once\): (whsec_\S+)", added.stdout)
    slack = console(
        *("notify", "add", "platform", "--slack", "https://93.184.216.34/services/T0/B0/xyz"),
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert slack.returncode == 0, slack.stderr
    assert "signing secret" not in slack.stdout
    listed = console("notify", "list", "platform", url=sqlite_url, cwd=tmp_path)
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [(r[1], r[2], r[3]) for r in rows] == [
        ("webhook", "93.184.216.34", ",".join(EVENTS)),  # no --events: all of them
        ("slack", "93.184.216.34", "question.created"),
    ]
    assert secret not in listed.stdout and "/services/" not in listed.stdout  # noqa: PT018
    with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
        stored = " ".join(str(v) for row in db.execute("SELECT * FROM notify_channel") for v in row)
    assert secret not in stored and "/services/" not in stored  # sealed  # noqa: PT018
    wrong = console(
        *("notify", "add", "platform", "--webhook", hook, "--events", "question.created,nope"),
        url=sqlite_url,
        cwd=tmp_path,
    )
    assert wrong.returncode == 1
    assert wrong.stderr.strip().splitlines()[-1].endswith(f"events: nope: not one of {', '.join(EVENTS)}")
    removed = console("notify", "remove", "platform", rows[1][0], url=sqlite_url, cwd=tmp_path)
    assert removed.returncode == 0, removed.stderr
    after = console("notify", "list", "platform", url=sqlite_url, cwd=tmp_path)
    assert [line.split("\t")[1] for line in after.stdout.splitlines()] == ["webhook"]


def test_cli_manages_members_and_servers_and_tests_a_connection(database_url: str, tmp_path: Path) -> None:
    def ok(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def fails(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 1, done.stdout
        return done.stderr.strip()

    ok("teams", "add", "platform")
    ok("teams", "add", "research")
    assert (
        ok("users", "add", "root", "--site-admin", "--password", "pw-root-1234") == "root is a site admin\n"
    )
    ok("users", "add", "alice", "--team", "platform", "--role", "admin")
    ok("users", "add", "bob", "--team", "research", "--role", "member")
    assert fails("users", "add", "carol") == "error: give --team with --role, or --site-admin, or both"
    assert ok("members", "add", "platform", "bob", "approver") == "bob is approver in platform\n"
    assert ok("teams", "list").splitlines() == ["platform\t2 members", "research\t1 member"]
    assert ok("members", "list", "platform").splitlines() == ["alice\tadmin", "bob\tapprover"]
    assert fails("members", "remove", "platform", "alice") == (
        "error: a team needs at least one admin: make someone else admin first"
    )
    assert fails("members", "role", "platform", "alice", "member").startswith("error: a team needs")
    ok("members", "role", "platform", "bob", "admin")
    assert ok("members", "remove", "platform", "alice") == "alice removed from platform\n"
    assert ok("members", "list", "platform").splitlines() == ["bob\tadmin"]
    assert fails("members", "add", "platform", "nobody", "member") == "error: no user 'nobody'"

    log = tmp_path / "mrtr.jsonl"
    ok("servers", "add", "mrtr", "--team", "platform", "--command", shlex.join([sys.executable, MRTR_SERVER]))
    ok(
        "servers",
        "edit",
        "platform",
        "mrtr",
        "--env",
        f"MRTR_LOG={log}",
        "--env",
        "TOKEN=s3cret-cli",
        "--trusted",
    )
    ok("servers", "edit", "platform", "mrtr", "--remove-env", "TOKEN", "--idempotent")
    tested = ok("servers", "test", "platform", "mrtr").splitlines()
    assert tested[0].startswith("ok: mrtr answered in ")
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in tested[1:]}
    assert rows["pid"] == ["Process id", "readOnly=true destructive=- idempotent=- openWorld=false"]
    assert rows["complete_now"] == ["-", "readOnly=- destructive=true idempotent=false openWorld=-"]
    assert ok("servers", "disable", "platform", "mrtr") == "server mrtr in platform disabled\n"
    assert ok("servers", "list").splitlines()[0].endswith("\tdisabled")
    assert ok("servers", "enable", "platform", "mrtr") == "server mrtr in platform enabled\n"
    ok("servers", "edit", "platform", "mrtr", "--protocol-version", "2025-11-25")
    assert ok("servers", "list").splitlines()[0].endswith("\tpinned to MCP 2025-11-25")
    ok("servers", "edit", "platform", "mrtr", "--protocol-version", "newest")
    assert "pinned" not in ok("servers", "list")
    moved = ok("servers", "edit", "platform", "mrtr", "--command", "/nonexistent/mcp-server")
    assert moved.splitlines()[1:] == [
        "it points elsewhere now, so the stored values of MRTR_LOG were dropped: give them again with "
        "--header or --env"
    ]
    broken = console("servers", "test", "platform", "mrtr", url=database_url, cwd=tmp_path)
    assert broken.returncode == 1
    assert "cannot connect to /nonexistent/mcp-server" in broken.stderr
    assert "s3cret-cli" not in ok("servers", "list")


def test_cli_members_remove_revokes_the_users_tokens_for_that_team_for_good(
    database_url: str, tmp_path: Path
) -> None:
    def ok(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def states() -> dict[str, str]:
        rows = [line.split("\t") for line in ok("tokens", "list", "bob").splitlines()]
        return {row[1]: row[-1].split()[0] for row in rows}

    ok("teams", "add", "platform")
    ok("teams", "add", "research")
    ok("users", "add", "bob", "--team", "platform", "--role", "member")
    ok("members", "add", "research", "bob", "member")
    ok("tokens", "create", "bob", "--team", "platform")
    ok("tokens", "create", "bob", "--team", "research")
    assert states() == {"platform": "active", "research": "active"}
    ok("members", "remove", "platform", "bob")
    assert states() == {"platform": "revoked", "research": "active"}
    ok("members", "add", "platform", "bob", "member")
    assert states() == {"platform": "revoked", "research": "active"}


def test_cli_sets_shows_and_clears_roots(tmp_path: Path) -> None:
    database_url = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"  # the commands are the same on either

    def ok(*args: str) -> str:
        done = console(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    ok("teams", "add", "platform")
    ok("servers", "add", "remote", "--team", "platform", "--url", "https://mcp.example.com/mcp")
    ok("servers", "add", "other", "--team", "platform", "--url", "https://mcp.example.org/mcp")
    app, data = "file:///srv/app Application code", "file:///srv/data"
    set_default = ok("roots", "set", "platform", "--root", app, "--root", data)
    assert set_default == "default roots of platform: file:///srv/app (Application code), file:///srv/data\n"
    assert (
        ok("roots", "set", "platform", "--server", "remote") == "roots of server remote in platform: none\n"
    )
    assert ok("roots", "show", "platform").splitlines() == [
        "team default: file:///srv/app (Application code), file:///srv/data",
        "other: the team default",
        "remote: none",
    ]
    ok("roots", "clear", "platform", "--server", "remote")
    ok("roots", "clear", "platform")
    assert ok("roots", "show", "platform").splitlines() == [
        "team default: none",
        "other: the team default",
        "remote: the team default",
    ]
    for bad, problem in [
        (["--root", "https://example.com/repo"], "is not a file:// URI"),
        (["--root", "file:///a", "--root", "file:///a"], "file:///a is listed twice"),
    ]:
        line = one_error_line(console("roots", "set", "platform", *bad, url=database_url, cwd=tmp_path))
        assert problem in line, line
    missing = console(
        *("roots", "set", "platform", "--server", "nope", "--root", "file:///a"),
        url=database_url,
        cwd=tmp_path,
    )
    assert one_error_line(missing) == "error: no server 'nope' in platform"
    assert ok("roots", "show", "platform").splitlines()[0] == "team default: none"  # nothing was saved


def test_server_text_is_printed_with_control_characters_escaped() -> None:
    assert printable("deploy\x1b[2J\x07 now") == "deploy\\x1b[2J\\x07 now"


def test_every_command_has_help(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'unused.db'}"
    top = console("--help", url=url, cwd=tmp_path)
    assert top.returncode == 0
    for command in (
        *("serve", "worker", "migrate", "demo", "teams", "users", "tokens", "servers", "members", "roots"),
        *("call", "test"),
    ):
        assert command in top.stdout
        assert console(command, "--help", url=url, cwd=tmp_path).returncode == 0
    for group, commands in {
        "members": ("add", "role", "list", "remove"),
        "servers": ("edit", "test"),
    }.items():
        for command in commands:
            assert console(group, command, "--help", url=url, cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("command", [["migrate"], ["servers", "list"]])
def test_commands_migrate_an_empty_sqlite_file_on_first_use(command: list[str], tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    done = console(*command, url=url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fresh.db").stat().st_size > 0


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a failed command printed: exit status 1, no traceback, nothing else."""
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_a_port_in_use_is_one_line_and_nothing_is_created_before_the_socket(
    command: str, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = console_process(command, "--port", str(port), url=url, cwd=tmp_path)
    assert one_error_line(done) == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no database, no demo keys


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"CONSOLE_ENV": "staging"},
            "error: invalid settings: CONSOLE_ENV: Input should be 'production', 'dev' or 'test'",
        ),
        (
            {"CONSOLE_OIDC_ISSUER": "https://id.example.com"},
            "error: invalid settings: set both CONSOLE_OIDC_ISSUER and CONSOLE_OIDC_CLIENT_ID, or neither",
        ),
        (
            {"CONSOLE_LOCAL_SIGN_IN": "false"},
            "error: invalid settings: CONSOLE_LOCAL_SIGN_IN=false needs single sign-on (CONSOLE_OIDC_ISSUER)",
        ),
    ],
)
def test_invalid_settings_are_one_line_naming_the_setting(
    settings: dict[str, str], expected: str, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"
    assert (
        one_error_line(console_process("serve", "--port", "0", url=url, cwd=tmp_path, **settings)) == expected
    )
    assert one_error_line(console("teams", "list", url=url, cwd=tmp_path, **settings)) == expected
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_postgresql_is_one_line_without_the_password(tmp_path: Path) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens here once the socket is closed
    url = f"postgresql+psycopg://console:s3cret-pw@127.0.0.1:{port}/console"
    for command in (["serve", "--port", "0"], ["worker"], ["migrate"], ["teams", "add", "x"]):
        run = console_process if command[0] in LONG_RUNNING else console
        line = one_error_line(run(*command, url=url, cwd=tmp_path))
        assert line.startswith(
            f"error: cannot use the database postgresql+psycopg://console:***@127.0.0.1:{port}/"
        )
        assert "Connection refused" in line


def test_serve_warns_at_start_when_the_secret_key_is_missing(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"
    for secret in (None, "k" * 32):
        env = {k: v for k, v in os.environ.items() if k != "CONSOLE_SECRET_KEY"}
        env |= {"CONSOLE_DATABASE_URL": url} | ({"CONSOLE_SECRET_KEY": secret} if secret else {})
        serve = subprocess.Popen(
            [sys.executable, "-m", "console.cli", "serve", "--port", "0"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            assert serve.stdout is not None
            assert next(read_lines(serve.stdout, TIMEOUT), "").startswith("listening on ")
        finally:
            serve.terminate()
            _, errors = serve.communicate(timeout=TIMEOUT)
        warnings = [line for line in errors.decode().splitlines() if line.startswith("warning: ")]
        if secret is None:
            assert warnings == [
                "warning: CONSOLE_SECRET_KEY is not set, so secrets for MCP servers (such as each user's own "
                "credentials) cannot be stored or used; set it to 32 or more random characters"
            ]
        else:
            assert warnings == []


def test_servers_test_says_why_an_http_server_refused_and_counts_one_tool(
    database_url: str, tmp_path: Path
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return console(*args, url=database_url, cwd=tmp_path)

    with running_tracker({"dev": "pw-dev-1234"}) as tracker:  # answers 401 without a known token
        assert run("teams", "add", "platform").returncode == 0
        added = run(
            "servers", "add", "tracker", "--team", "platform", "--url", tracker.mcp_url, "--internal",
            "--per-user-credential", "Authorization",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        per_user = run("servers", "test", "platform", "tracker")
        assert one_error_line(per_user) == "error: 401: this server needs each user's own credentials"

        wrong = "Authorization=Bearer not-a-tracker-token"
        assert run("servers", "edit", "platform", "tracker", "--shared", "--header", wrong).returncode == 0
        assert one_error_line(run("servers", "test", "platform", "tracker")) == (
            "error: 401: the server refused the credentials in this server's headers"
        )

        right = f"Authorization=Bearer {tracker.tokens['dev']}"
        assert run("servers", "edit", "platform", "tracker", "--header", right).returncode == 0
        tested = run("servers", "test", "platform", "tracker")
    assert tested.returncode == 0, tested.stderr
    assert re.fullmatch(r"ok: tracker answered in \d+\.\d s and lists 1 tool", tested.stdout.splitlines()[0])


def test_cli_sets_whether_oauth_requests_name_the_resource_and_the_application_id_uri(
    sqlite_url: str, tmp_path: Path
) -> None:
    assert console("teams", "add", "platform", url=sqlite_url, cwd=tmp_path).returncode == 0
    server = ("--team", "platform", "--url", "http://127.0.0.1:9/mcp", "--internal", "--oauth")
    entra = ("--oauth-resource-indicator", "omit", "--oauth-scope-prefix", "api://notes-app")
    added = console("servers", "add", "notes", *server, *entra, url=sqlite_url, cwd=tmp_path)
    assert added.returncode == 0, added.stderr

    def stored() -> tuple[str | None, str | None]:
        with sqlite3.connect(sqlite_url.split("///", 1)[1]) as db:
            [row] = db.execute(
                "SELECT oauth_resource_indicator, oauth_scope_prefix FROM mcp_server WHERE name = 'notes'"
            )
        return (row[0], row[1])

    assert stored() == ("omit", "api://notes-app")
    edit = ("servers", "edit", "platform", "notes")
    bad = console(*edit, "--oauth-scope-prefix", "notes app", url=sqlite_url, cwd=tmp_path)
    assert bad.returncode == 1
    assert (
        bad.stderr.strip()
        .splitlines()[-1]
        .startswith("  oauth_scope_prefix: an Application ID URI such as api://<application id>")
    ), bad.stderr
    auto = console(*edit, "--oauth-resource-indicator", "auto", url=sqlite_url, cwd=tmp_path)
    assert auto.returncode == 0, auto.stderr
    assert stored() == (None, "api://notes-app")  # the rule decides again; the URI stays


def test_a_database_url_as_people_write_it_works_and_one_the_console_cannot_use_is_one_line(
    tmp_path: Path,
) -> None:
    added = console("teams", "add", "research", url="sqlite:///console.db", cwd=tmp_path)
    assert (added.returncode, added.stderr) == (0, ""), added
    listed = console("teams", "list", url="sqlite:///console.db", cwd=tmp_path)
    assert listed.stdout.splitlines() == ["research\t0 members"]
    assert (tmp_path / "console.db").is_file()
    refused = console("teams", "list", url="mysql://app@db/console", cwd=tmp_path)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.splitlines() == [
        "error: invalid settings: CONSOLE_DATABASE_URL: mysql is not supported: the console keeps its data "
        "in SQLite or PostgreSQL"
    ]
