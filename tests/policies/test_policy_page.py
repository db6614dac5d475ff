"""The team policy page and `console policies`: admins set layered rules, others cannot, bad input named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from console.audit.models import AuditEvent
from tests.harness import (
    TEAM,
    Browser,
    Mrtr,
    html,
    one,
    promote,
    running_console,
    signed_in,
    stdio_deployer,
    text,
)
from tests.test_cli import console as run_cli

pytestmark = pytest.mark.anyio
PAGE = f"/admin/teams/{TEAM}/policies"


def cells(soup: BeautifulSoup) -> list[list[str]]:
    return [
        [" ".join(cell.get_text(" ").split()) for cell in row.select("th, td")]
        for row in soup.select("#policy-rules tbody tr[id]")
    ]


def rows(soup: BeautifulSoup) -> list[list[str]]:
    """Each rule's scope and answering settings (the gate column left out)."""
    return [[row[0], *row[2:8]] for row in cells(soup)]


async def save(who: Browser, **fields: str) -> int:
    body = {"csrf_token": who.csrf, "scope": "team", **fields}
    response = await who.client.post(PAGE, data=body)
    return response.status_code


async def test_an_admin_sets_edits_and_removes_rules_on_the_page(database_url: str, state_key: str) -> None:
    async with running_console(database_url, {"deployer": stdio_deployer(state_key)}) as console:
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            assert (
                await save(admin, answerers="approvers", expiry_minutes="120", expiry_action="decline") == 303
            )
            assert (
                await save(admin, scope="destructive", required_approvals="2", no_self_approval="forbid")
                == 303
            )
            assert (
                await save(admin, scope="tool", server="deployer", tool="deploy", step_up_minutes="5") == 303
            )
            assert await save(admin, scope="server", server="deployer", required_approvals="3") == 303
            page = html(await admin.client.get(PAGE))
            assert rows(page) == [
                ["Team default", "approvers", "inherit", "inherit", "120 min", "decline", "inherit"],
                [
                    "Destructive tools (stricter default)",
                    "inherit",
                    "forbidden",
                    "2",
                    "inherit",
                    "inherit",
                    "inherit",
                ],
                ["Server deployer", "inherit", "inherit", "3", "inherit", "inherit", "inherit"],
                ["Tool deploy on deployer", "inherit", "inherit", "inherit", "inherit", "inherit", "5 min"],
            ]
            # Editing: the form comes filled in; saving the same layer replaces it.
            server_row = page.select("#policy-rules tbody tr[id]")[2]
            edit = await admin.client.get(str(one(server_row, "a")["href"]).split("#")[0])
            form = one(html(edit), "form#rule-form")
            assert one(form, "#rule-approvals")["value"] == "3"
            assert one(form, "#rule-server option[selected]")["value"] == "deployer"
            assert await save(admin, scope="server", server="deployer", required_approvals="2") == 303
            assert rows(html(await admin.client.get(PAGE)))[2][3] == "2"

            remove = one(server_row, "form")
            response = await admin.client.post(str(remove["action"]), data={"csrf_token": admin.csrf})
            assert response.status_code == 303
            assert [r[0] for r in rows(html(await admin.client.get(PAGE)))] == [
                "Team default",
                "Destructive tools (stricter default)",
                "Tool deploy on deployer",
            ]

            # The deploy question now carries the combined policy and names where each part came from.
            call = await console.call("deployer", "deploy", {"service": "auth-service"})
            question = await console.question(call["pending"][0]["id"], who="lead")
        async with console.runtime.factory() as session:
            changes = (
                (
                    await session.execute(
                        select(AuditEvent).where(AuditEvent.action.in_(["policy_changed", "policy_removed"]))
                    )
                )
                .scalars()
                .all()
            )
    assert question["policy"] == {
        "answerers": "approvers",
        "no_self_approval": True,
        "required_approvals": 2,
        "step_up_minutes": 5,
        "expiry_action": "decline",
        "set_by": ["team default", "stricter default for destructive tools", "tool rule deploy on deployer"],
        "raised_by": None,
    }
    assert len(changes) == 6


@pytest.mark.parametrize(
    ("fields", "field_id", "message"),
    [
        ({"required_approvals": "two"}, "required_approvals", "a whole number, or blank to inherit"),
        ({"required_approvals": "11"}, "required_approvals", "must be a whole number from 1 to 10"),
        (
            {"answerers": "owner", "required_approvals": "2"},
            "required_approvals",
            "only one person can answer",
        ),
        ({"answerers": "everyone"}, "answerers", "must be one of owner, approvers, owner_or_approvers"),
        ({"scope": "tool", "tool": "has space"}, "tool", "no spaces"),
        ({"scope": "server"}, "server", "choose a server"),
        ({"scope": "server", "server": "nope"}, "server", "no such server in this team"),
        ({"scope": "nowhere"}, "scope", "must be one of team, destructive, server, tool"),
    ],
)
async def test_bad_rules_are_shown_next_to_their_field_and_nothing_is_saved(
    database_url: str, mrtr_memory: Mrtr, fields: dict[str, str], field_id: str, message: str
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            response = await admin.client.post(
                PAGE, data={"csrf_token": admin.csrf, "scope": "team", **fields}
            )
            assert response.status_code == 422
            soup = html(response)
            assert message in text(one(soup, f"#{field_id}-error"))
            assert rows(soup) == []


async def test_only_the_teams_admins_may_see_or_change_its_policy(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        for name in ("lead", "dev", "viewer"):
            async with signed_in(console, name) as who:
                page = await who.client.get(PAGE)
                assert page.status_code == 403, name
                assert f"Only admins of {TEAM} can manage it." in text(html(page))
                assert await save(who, answerers="owner") == 403
        async with signed_in(console, "outsider") as outsider:  # the same answer: no team names are learnt
            assert (await outsider.client.get(PAGE)).status_code == 403
            assert await save(outsider, answerers="owner") == 403
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            assert rows(html(await admin.client.get(PAGE))) == []


def test_the_cli_sets_lists_and_removes_rules(database_url: str, tmp_path: Path) -> None:
    def ok(*args: str) -> str:
        done = run_cli(*args, url=database_url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    ok("teams", "add", "platform")
    ok("servers", "add", "deployer", "--team", "platform", "--command", "python -m console.demo.deployer")
    ok("policies", "set", "platform", "--no-self-approval", "--expiry-minutes", "60")
    ok(
        "policies",
        "set",
        "platform",
        "--tool",
        "deploy*",
        "--server",
        "deployer",
        "--required-approvals",
        "2",
    )
    ok("policies", "set", "platform", "--destructive", "--step-up-minutes", "5")
    listed = [line.split("\t") for line in ok("policies", "list", "platform").splitlines()]
    assert [line[1:] for line in listed] == [
        ["Team default", "no_self_approval=True expiry_minutes=60"],
        ["Destructive tools (stricter default)", "step_up_minutes=5"],
        ["Tool deploy* on deployer", "required_approvals=2"],
    ]
    ok("policies", "remove", "platform", listed[1][0])
    assert len(ok("policies", "list", "platform").splitlines()) == 2

    bad = run_cli(
        "policies",
        "set",
        "platform",
        "--answerers",
        "owner",
        "--required-approvals",
        "3",
        url=database_url,
        cwd=tmp_path,
    )
    assert bad.returncode == 1
    assert "required_approvals: only one person can answer when only the owner may answer" in bad.stderr
    missing = run_cli("policies", "set", "platform", "--server", "nope", url=database_url, cwd=tmp_path)
    assert missing.returncode == 1
    assert "no server 'nope' in platform" in missing.stderr

    stranger = run_cli(
        *("policies", "set", "platform", "--escalate-after", "30", "--escalate-to", "carol"),
        url=database_url,
        cwd=tmp_path,
    )
    assert stranger.returncode == 1
    assert stranger.stderr.strip().splitlines()[-1].endswith("escalate_to: not members of this team: carol")
    ok("policies", "set", "platform", "--escalate-after", "30", "--escalate-to", "role:admin")
    [team_default] = [row for row in ok("policies", "list", "platform").splitlines() if "Team default" in row]
    # Replaced: the fields not given inherit.
    escalating = "escalate_after_minutes=30 escalate_to=role:admin"
    assert team_default.split("\t")[1:] == ["Team default", escalating]


def test_the_cli_gates_calls_that_meet_a_condition_and_refuses_a_bad_one_with_its_position(
    database_url: str, tmp_path: Path
) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, url=database_url, cwd=tmp_path)

    assert cli("teams", "add", "platform").returncode == 0
    added = cli(
        "servers", "add", "deployer", "--team", "platform", "--command", "python -m console.demo.deployer"
    )
    assert added.returncode == 0, added.stderr
    gate = (
        "policies",
        "set",
        "platform",
        "--server",
        "deployer",
        "--tool",
        "deploy",
        "--gate",
        "--allow-edit",
    )
    bad = cli(*gate, "--when", "amount > > 1000")
    assert bad.returncode == 1
    assert "when: expected a value, found '>' at column 10: 'amount > > 1000'" in bad.stderr
    assert "Traceback" not in bad.stderr
    saved = cli(
        *gate, "--when", "environment == 'production'", "--required-approvals", "2", "--no-self-approval"
    )
    assert saved.returncode == 0, saved.stderr
    listed = cli("policies", "list", "platform")
    assert [row.split("\t")[1:] for row in listed.stdout.splitlines()] == [
        [
            'Tool deploy on deployer when environment == "production"',
            "no_self_approval=True required_approvals=2 gate=True allow_edit=True",
        ]
    ]


async def test_an_admin_gates_production_deploys_on_the_page_and_a_bad_condition_says_where(
    database_url: str, state_key: str
) -> None:
    async with running_console(database_url, {"deployer": stdio_deployer(state_key)}) as console:
        await promote(console, "lead2", role="admin")
        async with signed_in(console, "lead2") as admin:
            bad = await admin.client.post(
                PAGE,
                data={
                    "csrf_token": admin.csrf,
                    "scope": "tool",
                    "server": "deployer",
                    "tool": "deploy",
                    "when": "environment = 'production'",
                    "gate": "gate",
                },
            )
            assert bad.status_code == 422
            message = one(html(bad), "#when-error").get_text()
            assert "column 13" in message
            assert "'=='" in message
            assert one(html(bad), "#rule-when")["value"] == "environment = 'production'"  # nothing lost

            saved = await save(
                admin,
                scope="tool",
                server="deployer",
                tool="deploy",
                when="environment == 'production'",
                gate="gate",
                allow_edit="allow",
                required_approvals="2",
            )
            assert saved == 303
            [row] = cells(html(await admin.client.get(PAGE)))
            assert row[:2] == ['Tool deploy on deployer when environment == "production"', "gate, may edit"]
