"""The list of audit actions (console/audit/actions.py) is the whole truth: nothing else is recorded, each
entry is recorded somewhere, and an action for site admins only never reaches a team's auditor, whether
on the audit page, an event's page or an export."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from console.audit import Actor, record_event
from console.audit.actions import ACTIONS, SITE_ONLY, Seen, UnknownAuditAction
from console.audit.models import AuditEvent
from console.identity import team_by_name
from console.transactions import transaction
from tests.harness import TEAM, Console, html, one, promote, running_console, signed_in, text

pytestmark = pytest.mark.anyio

CONSOLE = Path(__file__).resolve().parents[2] / "console"
# Written as f"call_{status}" (console/calls/rounds/ended.py) for a person's answer to the console's own
# question, so the names appear nowhere whole.
ANSWERED_AT_THE_CONSOLE = {"call_declined", "call_cancelled"}


def _string_constants(tree: ast.AST) -> set[str]:
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def _recorded_literals(tree: ast.AST) -> set[str]:
    """The actions `record_event(action="…")` calls name as a literal (or either branch of a conditional)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "record_event"):
            continue
        for keyword in node.keywords:
            if keyword.arg == "action" and not isinstance(keyword.value, ast.JoinedStr):
                found |= _string_constants(keyword.value)
    return found


def test_every_action_recorded_by_name_is_listed_and_every_listed_one_is_recorded() -> None:
    constants: set[str] = set()
    recorded: set[str] = set()
    for path in CONSOLE.rglob("*.py"):
        if path.name == "actions.py" and path.parent.name == "audit":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants |= _string_constants(tree)
        recorded |= _recorded_literals(tree)
    assert recorded - ACTIONS.keys() == set()
    assert ACTIONS.keys() - constants - ANSWERED_AT_THE_CONSOLE == set()
    assert all(action.records.endswith(".") and action.records[0].isupper() for action in ACTIONS.values())


async def test_an_unlisted_action_is_refused_before_anything_is_written(sqlite_url: str) -> None:
    async with running_console(sqlite_url, {}) as console, console.runtime.factory() as session:
        before = await session.scalar(select(func.count()).select_from(AuditEvent))
        with pytest.raises(UnknownAuditAction, match="no audit action 'made_up'"):
            record_event(
                session=session, actor=Actor("system"), action="made_up", subject_type="x", subject_id="1"
            )
        await session.commit()
        assert await session.scalar(select(func.count()).select_from(AuditEvent)) == before


async def _record_both(console: Console) -> dict[str, int]:
    """A site-only and a team action, both recorded with the platform team (as a hostile or mistaken
    code path might): their seq numbers by action."""
    async with transaction(console.runtime.factory) as session:
        team_id = (await team_by_name(session=session, name=TEAM)).id
        for action in ("signed_in", "server_tested"):
            record_event(
                session=session,
                actor=Actor("user", "u-probe"),
                action=action,
                subject_type="test",
                subject_id=f"boundary-{action}",
                team_id=team_id,
                payload={"secret_of_the_site": action == "signed_in"},
            )
        await session.commit()
        rows = await session.execute(
            select(AuditEvent.action, AuditEvent.seq).where(AuditEvent.subject_id.like("boundary-%"))
        )
        return {str(action): int(seq) for action, seq in rows.all()}


async def test_a_teams_auditor_never_sees_a_site_only_action_even_recorded_with_their_team(
    database_url: str,
) -> None:
    assert {name for name, action in ACTIONS.items() if action.seen_by is Seen.SITE} == SITE_ONLY
    async with running_console(database_url, {}) as console:
        seqs = await _record_both(console)
        assert set(seqs) == {"signed_in", "server_tested"}  # both chained
        await promote(console, "lead2", site_admin=True)
        async with signed_in(console, "viewer") as auditor, signed_in(console, "lead2") as site_admin:
            listed = html(await auditor.client.get("/audit"))
            shown = {text(cell) for cell in listed.select("#audit-events .action")}
            assert "server_tested" in shown
            assert "signed_in" not in shown
            options = {str(o["value"]) for o in listed.select("#audit-action option")}
            assert "server_tested" in options
            assert not options & SITE_ONLY
            filtered = html(await auditor.client.get("/audit", params={"action": "signed_in"}))
            assert filtered.select("#audit-events tbody tr") == []
            assert (await auditor.client.get(f"/audit/events/{seqs['signed_in']}")).status_code == 404
            team_event = html(await auditor.client.get(f"/audit/events/{seqs['server_tested']}"))
            assert text(one(team_event, "#action-records")) == ACTIONS["server_tested"].records
            export = await auditor.client.get("/audit/export", params={"format": "jsonl"})
            assert export.status_code == 200
            exported = {json.loads(line).get("action") for line in export.text.splitlines()}
            assert "server_tested" in exported
            assert "signed_in" not in exported
            assert "secret_of_the_site" in export.text  # the team event's payload; the site one's is absent
            assert export.text.count("secret_of_the_site") == 1

            everything = html(await site_admin.client.get("/audit", params={"action": "signed_in"}))
            assert str(seqs["signed_in"]) in {text(one(row, "td a")) for row in everything.select("tbody tr")}
            admin_options = {str(o["value"]) for o in everything.select("#audit-action option")}
            assert admin_options >= SITE_ONLY
            cell = one(everything, f"#event-{seqs['signed_in']} .action")
            assert cell["title"] == ACTIONS["signed_in"].records
