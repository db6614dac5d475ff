"""Roots on the admin pages: a site admin sets the team's default and a server's own; a mistake comes back
naming its line with nothing saved. Roots name places in the console's file system, so the team's own
admin only reads them (refused with 403 and audited when they try); a member, an approver, an auditor and
another team's admin are refused too and change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update

from console.identity.models import Membership
from console.identity.service import team_by_name
from console.mcp.admin_roots import set_roots, team_roots
from console.mcp.roots import Root
from console.transactions import transaction
from tests.harness import TEAM, Browser, Console, Mrtr, html, one, promote, running_console, signed_in
from tests.web.test_csrf_and_routes import audit_count

pytestmark = pytest.mark.anyio
BASE = f"/admin/teams/{TEAM}"
HOSTILE_NAME = "<script>alert(1)</script>"


async def stored(console: Console) -> tuple[tuple[Root, ...], dict[str, tuple[Root, ...] | None]]:
    async with transaction(console.runtime.factory) as session:
        shown = await team_roots(session=session, by=None, team_name=TEAM)
    return shown.default, shown.servers


async def post(who: Browser, path: str, **data: Any) -> int:
    response = await who.client.post(f"{BASE}{path}", data={"csrf_token": who.csrf, **data})
    return response.status_code


async def test_a_site_admin_sets_the_default_and_a_servers_own_roots_and_a_mistake_names_its_line(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        await promote(console, "lead", role="admin", site_admin=True)
        async with signed_in(console, "lead") as lead:
            lines = f"file:///srv/app {HOSTILE_NAME}\n\nfile:///srv/data"
            assert await post(lead, "/roots", roots=lines) == 303
            team_page = await lead.client.get(BASE)
            assert one(html(team_page), "#default-roots textarea").get_text() == (
                f"file:///srv/app {HOSTILE_NAME}\nfile:///srv/data"
            )
            assert "<script>alert(1)" not in team_page.text  # shown as text, never as markup

            server_page = html(await lead.client.get(f"{BASE}/servers/mrtr"))
            assert one(server_page, "#roots-inherit").has_attr("checked")  # no roots of its own yet
            assert "2 set" in one(server_page, 'label[for="roots-inherit"]').get_text()

            assert await post(lead, "/servers/mrtr/roots", roots="file:///srv/only Only") == 303
            default, servers = await stored(console)
            assert default == (Root("file:///srv/app", HOSTILE_NAME), Root("file:///srv/data"))
            assert servers == {"mrtr": (Root("file:///srv/only", "Only"),)}
            server_page = html(await lead.client.get(f"{BASE}/servers/mrtr"))
            assert not one(server_page, "#roots-inherit").has_attr("checked")
            assert one(server_page, "#roots-text").get_text() == "file:///srv/only Only"

            typed = "file:///srv/ok\nhttps://example.com/repo"
            refused = await lead.client.post(
                f"{BASE}/servers/mrtr/roots", data={"csrf_token": lead.csrf, "roots": typed}
            )
            assert refused.status_code == 422
            page = html(refused)
            assert one(page, "#roots-error").get_text() == (
                "line 2: 'https://example.com/repo' is not a file:// URI (MCP roots are file:// URIs)"
            )
            assert one(page, "#roots-text").get_text() == typed  # what was typed stays in the form
            assert await stored(console) == (default, servers)  # nothing was saved

            assert await post(lead, "/servers/mrtr/roots", roots="", inherit="on") == 303
            assert (await stored(console))[1] == {"mrtr": None}
            assert await post(lead, "/servers/mrtr/roots", roots="") == 303  # its own: none at all
            assert (await stored(console))[1] == {"mrtr": ()}
            bad_default = await lead.client.post(
                f"{BASE}/roots", data={"csrf_token": lead.csrf, "roots": "file://host"}
            )
            assert bad_default.status_code == 422
            assert "line 1: " in one(html(bad_default), "#roots-error").get_text()
        assert await audit_count(console, "team_roots_set") == 1
        assert await audit_count(console, "server_roots_set") == 3


async def test_a_team_admin_reads_the_roots_but_may_not_change_them(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        async with transaction(console.runtime.factory) as session:
            await set_roots(
                session=session, by=None, team_name=TEAM, server_name=None, roots=[Root("file:///srv/app")]
            )
        await promote(console, "lead", role="admin")
        before = await stored(console)
        async with signed_in(console, "lead") as lead:
            team_page = html(await lead.client.get(BASE))
            assert not team_page.select("#roots-form")
            assert one(team_page, "#default-roots #roots-lines").get_text() == "file:///srv/app"
            assert "Only a site admin sets roots" in one(team_page, "#roots-note").get_text()
            server_page = html(await lead.client.get(f"{BASE}/servers/mrtr"))
            assert not server_page.select("#roots-form")
            assert "takes the team's default roots (1 set)" in one(server_page, "#roots-shown").get_text()
            for path in ("/roots", "/servers/mrtr/roots"):
                assert await post(lead, path, roots="file:///") == 403
        assert await stored(console) == before
        refused = await console.audit_payloads("access_refused")
        assert [(p["attempt"], p["server"]) for p in refused] == [("set roots", None), ("set roots", "mrtr")]
        assert await audit_count(console, "team_roots_set") == 1  # the operator's


@pytest.mark.parametrize("who", ["dev", "lead", "viewer", "outsider"])
async def test_members_approvers_auditors_and_other_teams_admins_may_not_change_its_roots(
    database_url: str, mrtr_memory: Mrtr, who: str
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        if who == "outsider":  # an admin, but of another team
            async with transaction(console.runtime.factory) as session:
                elsewhere = await team_by_name(session=session, name="elsewhere")
                await session.execute(
                    update(Membership).where(Membership.team_id == elsewhere.id).values(role="admin")
                )
                await session.commit()
        before = await stored(console)
        async with signed_in(console, who) as person:
            for path in ("/roots", "/servers/mrtr/roots"):
                assert await post(person, path, roots="file:///etc") == 403
            assert (await person.client.get(f"{BASE}/servers/mrtr")).status_code == 403
        assert await stored(console) == before
        assert await audit_count(console, "team_roots_set") == 0
        assert await audit_count(console, "server_roots_set") == 0
