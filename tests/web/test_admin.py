"""The admin pages for teams, members and API tokens: who may use them, and what each change does."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup
from sqlalchemy import select

from console.audit.models import AuditEvent
from tests.harness import TEAM, Browser, Console, html, one, promote, running_console, signed_in, user_id
from tests.web.test_csrf_and_routes import header_problems

pytestmark = pytest.mark.anyio
HTMX = {"HX-Request": "true"}


def members(page: BeautifulSoup) -> dict[str, str]:
    """Name -> selected role, as the team page shows them."""
    shown: dict[str, str] = {}
    for row in page.select("#members tbody tr"):
        selected = one(row, "select option[selected]")
        shown[row.select("td")[0].get_text(strip=True)] = str(selected["value"])
    return shown


async def events(console: Console, action: str) -> list[dict[str, object]]:
    async with console.runtime.factory() as session:
        rows = (await session.execute(select(AuditEvent).where(AuditEvent.action == action))).scalars()
        return [{"actor": e.actor_id, **json.loads(e.payload_json)} for e in rows]


async def post(who: Browser, target: str, data: dict[str, str] | None = None) -> int:
    response = await who.client.post(target, data={"csrf_token": who.csrf, **(data or {})})
    return response.status_code


async def test_a_site_admin_creates_a_team_and_then_manages_it(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "viewer", site_admin=True)
        async with signed_in(console, "viewer") as boss:
            page = await boss.client.get("/admin")
            assert page.status_code == 200
            assert header_problems(page) == []
            assert one(html(page), 'nav a[href="/admin"]').get_text() == "Admin"
            assert {a.get_text() for a in html(page).select("#teams a")} == {TEAM, "elsewhere"}
            created = await boss.client.post(
                "/admin/teams", data={"csrf_token": boss.csrf, "name": "research"}
            )
            assert created.status_code == 303
            assert created.headers["location"] == "/admin/teams/research"
            team_page = await boss.client.get("/admin/teams/research")
            assert team_page.status_code == 200
            assert members(html(team_page)) == {}
            assert await post(boss, "/admin/teams/research/members", {"name": "dev", "role": "admin"}) == 303
            assert members(html(await boss.client.get("/admin/teams/research"))) == {"dev": "admin"}
            bad = await boss.client.post("/admin/teams", data={"csrf_token": boss.csrf, "name": "a b/c"})
            assert bad.status_code == 422
            assert "invalid team name" in one(html(bad), "[role=alert]").get_text()
            duplicate = await boss.client.post("/admin/teams", data={"csrf_token": boss.csrf, "name": TEAM})
            assert duplicate.status_code == 409
        [event] = [e for e in await events(console, "team_created") if e["name"] == "research"]
        assert event["actor"] == await user_id(console, "viewer")  # the site admin, not the system


async def test_a_team_admin_adds_changes_and_removes_members_but_never_the_last_admin(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        base = f"/admin/teams/{TEAM}"
        async with signed_in(console, "lead") as lead:
            index = html(await lead.client.get("/admin"))
            assert [a.get_text() for a in index.select("#teams a")] == [TEAM]  # not "elsewhere"
            assert not index.select('form[action="/admin/teams"]')  # only site admins create teams
            assert await post(lead, f"{base}/members", {"name": "outsider", "role": "auditor"}) == 303
            assert await post(lead, f"{base}/members/outsider", {"role": "approver"}) == 303
            shown = members(html(await lead.client.get(base)))
            assert shown == {
                "dev": "member",
                "lead": "admin",
                "lead2": "approver",
                "outsider": "approver",
                "viewer": "auditor",
            }
            assert await post(lead, f"{base}/members/outsider/remove") == 303
            assert "outsider" not in members(html(await lead.client.get(base)))

            # The only admin can neither step down nor leave.
            for url, data in (
                (f"{base}/members/lead", {"role": "member"}),
                (f"{base}/members/lead/remove", {}),
            ):
                refused = await lead.client.post(url, data={"csrf_token": lead.csrf, **data})
                assert refused.status_code == 409
                assert "at least one admin" in one(html(refused), "main").get_text()
            assert members(html(await lead.client.get(base)))["lead"] == "admin"

            # With htmx the members block comes back on its own; errors go to #flash.
            fragment = await lead.client.post(
                f"{base}/members/lead2", data={"role": "admin"}, headers={**HTMX, "X-CSRF-Token": lead.csrf}
            )
            assert fragment.status_code == 200
            assert members(html(fragment))["lead2"] == "admin"
            assert "<html" not in fragment.text
            unknown = await lead.client.post(
                f"{base}/members",
                data={"name": "nobody", "role": "member"},
                headers={**HTMX, "X-CSRF-Token": lead.csrf},
            )
            assert unknown.status_code == 404
            assert unknown.headers["hx-retarget"] == "#flash"
            # Now there are two admins, one may step down.
            assert await post(lead, f"{base}/members/lead", {"role": "approver"}) == 303
        actions = {e["user"]: e for e in await events(console, "member_role_changed")}
        assert actions["lead"]["previous"] == "admin"
        assert [e["user"] for e in await events(console, "member_added")][-1:] == ["outsider"]
        assert [e["user"] for e in await events(console, "member_removed")] == ["outsider"]


@pytest.mark.parametrize("who", ["dev", "lead", "viewer", "outsider"])
async def test_members_approvers_auditors_and_outsiders_get_403_on_every_admin_page_and_post(
    database_url: str, who: str
) -> None:
    async with running_console(database_url, {}) as console:
        async with signed_in(console, who) as person:
            nav = html(await person.client.get("/"))
            assert not nav.select('nav a[href="/admin"]')
            base = f"/admin/teams/{TEAM}"
            unknown = "/admin/teams/no-such-team"
            for url in (
                "/admin",
                base,
                f"{base}/tokens",
                f"{base}/servers/new",
                f"{base}/servers/x",
                unknown,
            ):
                response = await person.client.get(url)
                assert response.status_code == 403, url
                assert header_problems(response) == []
            posts = {
                "/admin/teams": {"name": "mine"},
                f"{base}/members": {"name": who, "role": "admin"},
                f"{base}/members/{who}": {"role": "admin"},
                f"{base}/members/lead/remove": {},
                f"{base}/tokens/x/revoke": {},
                f"{base}/servers": {"name": "x", "transport": "http", "url": "http://127.0.0.1:9/mcp"},
                f"{base}/servers/x": {"transport": "http", "url": "http://127.0.0.1:9/mcp"},
                f"{base}/servers/x/disable": {},
                f"{base}/servers/x/enable": {},
                f"{base}/servers/x/test": {},
            }
            for url, data in posts.items():
                assert await post(person, url, data) == 403, url
        assert await events(console, "member_added") == []
        assert "mine" not in [e.get("name") for e in await events(console, "team_created")]


async def test_an_admin_revokes_a_members_token_and_it_fails_on_the_next_request(database_url: str) -> None:
    async with running_console(database_url, {}) as console:
        await promote(console, "lead", role="admin")
        agent = console.auth("dev")
        assert (await console.client.get("/api/v1/servers", headers=agent)).status_code == 200
        async with signed_in(console, "lead") as lead:
            page = await lead.client.get(f"/admin/teams/{TEAM}/tokens")
            assert page.status_code == 200
            rows = {
                row.select("td")[0].get_text(strip=True): row for row in html(page).select("#tokens tbody tr")
            }
            assert set(rows) == {"dev", "lead", "lead2", "viewer"}  # not outsider: another team
            assert "never" not in rows["dev"].get_text()  # used just now
            form = one(rows["dev"], "form")
            assert await post(lead, str(form["action"])) == 303
            assert (await console.client.get("/api/v1/servers", headers=agent)).status_code == 401
            again = html(await lead.client.get(f"/admin/teams/{TEAM}/tokens"))
            assert "revoked" in one(again, f"#{rows['dev']['id']}").get_text()
            # A token whose owner left the team is revoked with the membership, and the page says so.
            assert await post(lead, f"/admin/teams/{TEAM}/members/viewer/remove") == 303
            left = html(await lead.client.get(f"/admin/teams/{TEAM}/tokens"))
            [viewer_row] = [
                r for r in left.select("#tokens tbody tr") if "viewer" in r.select("td")[0].get_text()
            ]
            assert "revoked" in viewer_row.get_text()
            assert (
                await console.client.get("/api/v1/servers", headers=console.auth("viewer"))
            ).status_code == 401
        event, ended = await events(console, "token_revoked")
        assert (event["owner"], event["revoked_by"], event["team"]) == ("dev", "lead", TEAM)
        assert console.tokens["dev"] not in json.dumps(event)
        assert (ended["owner"], ended["reason"]) == ("viewer", "membership ended")
