"""The runs list: each person finds their own runs, approvers, admins and auditors their team's, by state and
page by page; nobody sees a run they could not open."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from bs4 import BeautifulSoup

from tests.harness import Browser, Console, Mrtr, html, one, promote, running_console, signed_in, text

pytestmark = pytest.mark.anyio

HTMX = {"HX-Request": "true"}


async def runs_page(who: Browser, url: str = "/runs", **params: str) -> BeautifulSoup:
    response = await who.client.get(url, params=params or None)
    assert response.status_code == 200, (url, response.status_code, response.text[:500])
    return html(response)


def run_ids(soup: BeautifulSoup) -> list[str]:
    """The run ids of the list's rows, top to bottom."""
    return [str(row["id"]).removeprefix("run-") for row in soup.select("#run-list tr.run-row")]


def older_link(soup: BeautifulSoup) -> str | None:
    links = [a for a in soup.select("#run-list a") if text(a) == "Older runs"]
    assert len(links) <= 1
    return str(links[0]["href"]) if links else None


async def run_with(console: Console, tool: str | None, arguments: dict[str, Any], **kw: Any) -> str:
    """A run of `who` (default dev) with one call of `tool` on mrtr (none when `tool` is None)."""
    who = kw.pop("who", "dev")
    run_id = await console.new_run(who, kw.pop("title", f"{tool or 'empty'} run"))
    if tool is not None:
        await console.call("mrtr", tool, arguments, who=who, run_id=run_id)
    return run_id


async def test_dev_reaches_their_waiting_run_from_the_navigation(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        run_id = await console.new_run("dev", "Deploy auth-service 2.4.1")
        call = await console.call("mrtr", "two_rounds", {"topic": "deploy"}, run_id=run_id)
        assert call["status"] == "awaiting_input"
        async with signed_in(console, "dev") as dev:
            inbox = await runs_page(dev, "/")
            nav = one(inbox, "header nav")
            assert one(nav, 'a[href="/runs"]').get_text() == "Runs"

            row = one(await runs_page(dev), f"#run-{run_id}")
            link = one(row, "a.run-link")
            assert (text(link), link["href"]) == ("Deploy auth-service 2.4.1", f"/runs/{run_id}")
            assert text(one(row, ".team")) == "platform"
            assert text(one(row, ".agent")) == "agent pytest"
            assert text(one(row, ".owner")) == "you"
            assert text(one(row, ".run-state")) == "waiting for an answer"
            started = one(row, ".started time")
            assert str(started["datetime"]).endswith("Z")
            assert text(started).endswith(" ago")

            timeline = await runs_page(dev, f"/runs/{run_id}")
            question = call["pending"][0]["id"]
            assert one(timeline, f'a[href="/elicitations/{question}"]')


async def test_a_member_sees_only_their_own_runs_and_approvers_and_auditors_their_teams(
    database_url: str, mrtr_memory: Mrtr
) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        devs = await run_with(console, "two_rounds", {"topic": "mine"}, title="dev's run")
        lead2s = await run_with(console, "two_rounds", {"topic": "theirs"}, who="lead2", title="lead2's run")
        leads = await run_with(console, None, {}, who="lead", title="lead's run")
        everything = {devs, lead2s, leads}
        async with (
            signed_in(console, "dev") as dev,
            signed_in(console, "lead") as lead,
            signed_in(console, "viewer") as auditor,
            signed_in(console, "outsider") as outsider,
        ):
            member_view = await runs_page(dev)
            assert run_ids(member_view) == [devs]
            assert "lead2's run" not in text(one(member_view, "main"))
            assert member_view.select("#filter-whose") == []  # there is nobody else's to choose from
            assert set(run_ids(await runs_page(dev, whose="mine"))) == {devs}

            assert set(run_ids(await runs_page(lead))) == everything
            assert run_ids(await runs_page(lead, whose="mine")) == [leads]
            assert set(run_ids(await runs_page(auditor))) == everything
            assert run_ids(await runs_page(auditor, whose="mine")) == []
            row = one(await runs_page(lead), f"#run-{lead2s}")
            assert text(one(row, ".owner")) == "lead2"

            nobody = await runs_page(outsider)
            assert run_ids(nobody) == []
            assert "No runs yet." in text(one(nobody, ".empty-state"))
            # Paging from a run one may not see reveals nothing about it either.
            assert (await outsider.client.get("/runs", params={"before": devs})).status_code == 404
            assert (await dev.client.get("/runs", params={"before": lead2s})).status_code == 404

            await promote(console, "dev", role="approver")
            assert set(run_ids(await runs_page(dev))) == everything  # the role counts at each request


async def test_the_runs_list_filters_by_state(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        waiting = await run_with(console, "two_rounds", {"topic": "wait"})
        completed = await run_with(console, "complete_now", {"x": "hi"})
        failed = await run_with(console, "ask_sampling", {})
        idle = await run_with(console, None, {})
        mixed = await run_with(console, "complete_now", {"x": "hi"})
        await console.call("mrtr", "two_rounds", {"topic": "second call"}, run_id=mixed)
        async with signed_in(console, "dev") as dev:
            states = {
                str(row["id"]).removeprefix("run-"): text(one(row, ".run-state"))
                for row in (await runs_page(dev)).select("tr.run-row")
            }
            assert states == {
                waiting: "waiting for an answer",
                completed: "completed",
                failed: "failed",
                idle: "no calls yet",
                mixed: "waiting for an answer",  # any call waiting for a person makes the run wait
            }
            assert set(run_ids(await runs_page(dev, state="waiting"))) == {waiting, mixed}
            assert run_ids(await runs_page(dev, state="completed")) == [completed]
            assert run_ids(await runs_page(dev, state="failed")) == [failed]
            assert run_ids(await runs_page(dev, state="idle")) == [idle]
            none = await runs_page(dev, state="interrupted")
            assert run_ids(none) == []
            assert "No runs match." in text(one(none, ".empty-state"))
            chosen = one(none, "#filter-state option[selected]")
            assert chosen["value"] == "interrupted"
            assert (await dev.client.get("/runs", params={"state": "everything"})).status_code == 422

            fragment = await dev.client.get("/runs", params={"state": "failed"}, headers=HTMX)
            assert fragment.status_code == 200
            assert "<html" not in fragment.text
            section = one(html(fragment), "section#run-list")
            assert section["hx-get"] == "/runs?state=failed"  # it refreshes itself with the same filter
            assert run_ids(html(fragment)) == [failed]


async def test_the_runs_list_pages_newest_first_with_a_keyset(database_url: str, mrtr_memory: Mrtr) -> None:
    async with running_console(database_url, {"mrtr": mrtr_memory.spec}) as console:
        with anyio.fail_after(60):
            created = [await console.new_run("dev", f"run {n}") for n in range(55)]
        async with signed_in(console, "dev") as dev:
            first = await runs_page(dev)
            pages = [run_ids(first)]
            link = older_link(first)
            assert link is not None
            assert "before=" in link
            newcomer = await console.new_run("dev", "newcomer")  # neither shifts nor repeats the older page
            pages.append(run_ids(await runs_page(dev, link)))
            assert older_link(await runs_page(dev, link)) is None
            assert [len(p) for p in pages] == [50, 5]
            assert [i for p in pages for i in p] == created[::-1]
            assert run_ids(await runs_page(dev))[0] == newcomer
