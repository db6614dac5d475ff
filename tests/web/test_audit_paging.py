"""The audit page pages through the log by event number: Newer and Older links that keep the filters,
pages that neither overlap nor skip, and cursors that cannot reach past the viewer's teams."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from bs4 import BeautifulSoup
from sqlalchemy.ext.asyncio import AsyncSession

from console.audit import Actor, record_event
from console.identity import team_by_name
from console.web.audit import PAGE_SIZE
from tests.harness import TEAM, Browser, Console, html, one, running_console, signed_in, text

pytestmark = pytest.mark.anyio

OURS = PAGE_SIZE * 2 + 7  # three pages of probes, the last one short


async def write_probes(console: Console, team: str, count: int) -> None:
    async with console.runtime.factory() as session:
        await record_probes(session, team, count)


async def record_probes(session: AsyncSession, team: str, count: int) -> None:
    """`count` audit events of `team`, committed."""
    team_id = (await team_by_name(session=session, name=team)).id
    for index in range(count):
        record_event(
            session=session,
            actor=Actor("user", "u1"),
            action="server_tested",
            subject_type="test",
            subject_id=f"{team}-{index}",
            team_id=team_id,
        )
    await session.commit()


def seqs(soup: BeautifulSoup) -> list[int]:
    return [int(text(one(row, "td a"))) for row in soup.select("#audit-events tbody tr")]


def link(soup: BeautifulSoup, selector: str) -> str | None:
    found = soup.select_one(selector)
    return None if found is None else str(found["href"])


async def page(who: Browser, url: str) -> BeautifulSoup:
    response = await who.client.get(url)
    assert response.status_code == 200, response.text[:500]
    return html(response)


async def test_older_and_newer_links_walk_the_filtered_log_without_overlap_and_keep_the_filter(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await write_probes(console, TEAM, OURS)
        async with signed_in(console, "viewer") as auditor:
            first = await page(auditor, "/audit?action=server_tested")
            assert len(seqs(first)) == PAGE_SIZE
            assert link(first, "#newer-page") is None
            pages, url = [first], link(first, "#next-page")
            while url is not None:
                assert parse_qs(urlsplit(url).query)["action"] == ["server_tested"]
                pages.append(await page(auditor, url))
                url = link(pages[-1], "#next-page")
            walked = [seq for soup in pages for seq in seqs(soup)]
            assert [len(seqs(soup)) for soup in pages] == [PAGE_SIZE, PAGE_SIZE, 7]
            assert walked == sorted(set(walked), reverse=True)  # newest first, no event twice
            assert {text(cell) for soup in pages for cell in soup.select("#audit-events .action")} == {
                "server_tested"
            }

            newer = link(pages[-1], "#newer-page")
            assert newer is not None
            assert parse_qs(urlsplit(newer).query)["action"] == ["server_tested"]
            assert seqs(await page(auditor, newer)) == seqs(pages[1])


async def test_a_crafted_cursor_shows_no_event_of_another_team_and_a_member_cannot_page(
    database_url: str,
) -> None:
    async with running_console(database_url, {}) as console:
        await write_probes(console, "elsewhere", 5)
        await write_probes(console, TEAM, 3)
        async with signed_in(console, "viewer") as auditor, signed_in(console, "dev") as member:
            ours = seqs(await page(auditor, "/audit?action=server_tested"))
            assert len(ours) == 3
            theirs = range(min(ours) - 5, min(ours))  # written just before ours
            for cursor in (f"before={min(ours)}", "after=0", f"after={min(theirs) - 1}"):
                shown = seqs(await page(auditor, f"/audit?{cursor}"))
                assert [seq for seq in shown if seq in theirs] == [], cursor
            for cursor in ("before=5", "after=0"):
                assert (await member.client.get(f"/audit?{cursor}")).status_code == 403


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("before=abc", "before"),
        ("before=-1", "before"),
        ("after=99999999999999999999999", "after"),
        ("before=5&after=2", "after"),
        ("since=yesterday", "since"),
    ],
)
async def test_a_bad_paging_parameter_is_a_422_naming_the_field(
    database_url: str, query: str, field: str
) -> None:
    async with running_console(database_url, {}) as console, signed_in(console, "viewer") as auditor:
        response = await auditor.client.get(f"/audit?{query}")
        assert response.status_code == 422
        assert field in text(one(html(response), ".error-message"))
